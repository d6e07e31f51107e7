import { describe, expect, it } from 'vitest';
import { LedgerError } from '../../src/errors.js';
import { kafkaErrorCode } from '../../src/kafka/index.js';
import { isKafkaOutage, isKafkaTrouble } from '../../executor/command-handler.js';

/** An error as the binding hands it to the writers: librdkafka's message and code. */
function kafkaError(name: string, message: string): Error {
  const code = kafkaErrorCode(name);
  if (code === undefined) throw new Error(`no librdkafka error ${name}`);
  return Object.assign(new Error(message), { code });
}

// A command that failed for Kafka's sake is never counted towards its dead-lettering: an outage of any
// length must dead-letter nothing. A failure of the command itself is counted.
describe('which failures of a command step are Kafka trouble', () => {
  it('counts an outage, a fence, a given-up writer and the registry as Kafka trouble', () => {
    expect(isKafkaTrouble(kafkaError('_MSG_TIMED_OUT', 'Local: Message timed out'))).toBe(true);
    expect(isKafkaTrouble(kafkaError('_TIMED_OUT', 'Local: Timed out'))).toBe(true);
    expect(isKafkaTrouble(kafkaError('NOT_LEADER_FOR_PARTITION', 'Broker: Not leader for partition'))).toBe(true);
    expect(isKafkaTrouble(kafkaError('_FENCED', 'Local: This instance has been fenced by a newer instance'))).toBe(true);
    expect(isKafkaTrouble(new LedgerError('FENCED', 'fenced'))).toBe(true);
    expect(isKafkaTrouble(new LedgerError('UNAVAILABLE', 'registry down'))).toBe(true);
    expect(isKafkaTrouble(new LedgerError('TIMEOUT', 'given up', { reason: 'writer-given-up' }))).toBe(true);
  });

  it('counts a record too large, a refused schema and any other error against the command', () => {
    expect(isKafkaTrouble(kafkaError('MSG_SIZE_TOO_LARGE', 'Broker: Message size too large'))).toBe(false);
    expect(isKafkaTrouble(new LedgerError('TIMEOUT', 'a tool timed out'))).toBe(false);
    expect(isKafkaTrouble(new LedgerError('VALIDATION', 'bad payload'))).toBe(false);
    expect(isKafkaTrouble(new TypeError('x is undefined'))).toBe(false);
    // A message alone says nothing: only an error with librdkafka's code is an outage.
    expect(isKafkaOutage(new Error('the tool timed out'))).toBe(false);
    expect(isKafkaOutage(kafkaError('_TIMED_OUT', 'Local: Timed out'))).toBe(true);
    expect(isKafkaOutage(kafkaError('_FENCED', 'Local: fenced'))).toBe(false);
  });
});
