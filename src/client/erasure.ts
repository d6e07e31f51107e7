import { setTimeout as sleep } from 'node:timers/promises';
import { parseErasureRecord, type ErasureRecord } from '../audit/erasure-record.js';
import type { KafkaClient } from '../kafka/index.js';

/**
 * The erasure record a command caused, from `<prefix>.ledger-audit`. It commits with the tombstones,
 * but its partition's transaction marker may trail theirs by a moment, so a miss is re-read briefly.
 */
export async function findErasure(kafka: KafkaClient, topic: string, commandId: string, from: Map<number, string> | undefined, advance: (next: Map<number, string>) => void): Promise<ErasureRecord | undefined> {
  for (let attempt = 0; attempt < 20; attempt++) {
    let found: ErasureRecord | undefined;
    const next = await kafka.readToEnd({
      topic,
      ...(from ? { from } : {}),
      onRecords: (records) => {
        for (const r of records) {
          const rec = parseErasureRecord(r.value);
          if (rec?.commandId === commandId) found = rec;
        }
      },
    });
    from = next;
    advance(next);
    if (found) return found;
    await sleep(100);
  }
  return undefined;
}
