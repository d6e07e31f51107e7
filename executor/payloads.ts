import { parseRef, placePayload, type PayloadLimits } from '../src/blobs/index.js';
import { isLedgerError } from '../src/errors.js';
import type { OutRecord } from '../src/kafka/index.js';
import type { AttemptOutcome } from './item-runner.js';

type Result = Extract<AttemptOutcome, { kind: 'result' }>;

/**
 * An attempt's payloads (its output, its follow-ups' inputs) on their way to the log: each sealed with the
 * plan's key (`seal`; identity without one), then inline or, past the inline threshold, by reference, its
 * chunks (holding the ciphertext) returned to go in the same transaction. A payload already a reference
 * stays as it is. Past the ceiling, or not JSON, the attempt fails terminally instead
 * (`OUTPUT_TOO_LARGE`, `INVALID_OUTPUT`) and nothing is placed.
 */
export function placeOutcome(
  planId: string,
  outcome: Result,
  seal: (json: string) => string,
  limits: PayloadLimits,
  at: number,
  partition: number,
): { ended: Result; blobs: Array<{ refJson: string; messages: OutRecord[] }> } {
  const blobs: Array<{ refJson: string; messages: OutRecord[] }> = [];
  const place = (plain: string, field: string): string => {
    if (parseRef(plain) !== undefined) return plain;
    const placed = placePayload(planId, seal(plain), field, limits, at, partition);
    if (placed.blob) blobs.push(placed.blob);
    return placed.json;
  };
  try {
    const outputJson = outcome.outputJson === null ? null : place(outcome.outputJson, 'output');
    const followUps = outcome.followUps.map((f, i) => ({ ...f, inputJson: place(f.inputJson, `followUps[${i}].input`) }));
    return { ended: { ...outcome, outputJson, followUps }, blobs };
  } catch (e) {
    const tooLarge = isLedgerError(e, 'PAYLOAD_TOO_LARGE');
    return {
      ended: {
        ...outcome,
        outcome: 'failed_terminal',
        outputJson: null,
        followUps: [],
        error: { code: tooLarge ? 'OUTPUT_TOO_LARGE' : 'INVALID_OUTPUT', message: (e as Error).message, detailsJson: null },
      },
      blobs: [],
    };
  }
}
