import { describe, expect, it } from 'vitest';
import { KafkaJSConnectionError, KafkaJSProtocolError, KafkaJSRequestTimeoutError } from 'kafkajs';
import { forgetsCoordinator } from '../../src/kafka/coordinator-cache.js';

const protocolError = (type: string, code: number) => Object.assign(new KafkaJSProtocolError(type), { type, code });

describe('the transaction coordinator cache', () => {
  it('keeps a coordinator that answered about the transaction itself', () => {
    for (const type of ['CONCURRENT_TRANSACTIONS', 'INVALID_PRODUCER_EPOCH', 'PRODUCER_FENCED', 'INVALID_TXN_STATE']) {
      expect(forgetsCoordinator(protocolError(type, 51)), type).toBe(false);
    }
  });

  it('forgets it on an answer that it is not (or not yet) the coordinator, a lost connection, a timeout, anything else', () => {
    expect(forgetsCoordinator(protocolError('NOT_COORDINATOR', 16))).toBe(true);
    expect(forgetsCoordinator(protocolError('COORDINATOR_NOT_AVAILABLE', 15))).toBe(true);
    expect(forgetsCoordinator(protocolError('COORDINATOR_LOAD_IN_PROGRESS', 14))).toBe(true);
    expect(forgetsCoordinator(new KafkaJSConnectionError('Connection error: ECONNREFUSED'))).toBe(true);
    expect(forgetsCoordinator(new KafkaJSRequestTimeoutError('Request EndTxn(key: 26, version: 1) timed out'))).toBe(true);
    expect(forgetsCoordinator(new Error('Not connected'))).toBe(true);
    expect(forgetsCoordinator(undefined)).toBe(true);
  });
});
