import { setTimeout as sleep } from 'node:timers/promises';
import { isLedgerError, LedgerError } from '../errors.js';
import { partitionFor, type KafkaClient, type LedgerAdmin } from '../kafka/index.js';
import { Lru } from '../lru.js';
import { chunkKey, parseRef, sha256Hex, type BlobRef } from './blob.js';

/** Reads of a payload that end short of a chunk, before it counts as missing (about 1 s in all). */
const READ_AFTER_COMMIT_TRIES = 8;

export interface BlobReaderOptions {
  readonly kafka: KafkaClient;
  readonly admin: LedgerAdmin;
  /** `<prefix>.plan-blobs`. */
  readonly topic: string;
  readonly partitions: number;
  /** Bytes of resolved payloads kept for the next read (default 64 MiB). */
  readonly cacheBytes?: number;
}

/**
 * Resolves payload references (see blob.ts): finds the chunks by the reference's timestamp on the plan's
 * partition of the blobs topic, reads forward until every chunk is there, and checks length and sha256 —
 * a missing chunk is NOT_FOUND, content that does not match its reference is INTEGRITY. Resolved payloads
 * are kept in a small LRU by plan and digest.
 */
export class BlobReader {
  private readonly cache: Lru<string, string>;

  constructor(private readonly o: BlobReaderOptions) {
    this.cache = new Lru({ maxWeight: o.cacheBytes ?? 64 * 1024 * 1024, weigh: (text) => text.length });
  }

  /** The payload text a stored payload stands for: itself when inline, the blob's content when a reference. */
  async resolve(planId: string, json: string): Promise<string> {
    const ref = parseRef(json);
    return ref ? this.read(planId, ref) : json;
  }

  async read(planId: string, ref: BlobRef): Promise<string> {
    const cacheKey = `${planId}:${ref.sha256}`;
    const hit = this.cache.get(cacheKey);
    if (hit !== undefined) return hit;
    // A payload written in a transaction that just committed can be a few milliseconds ahead of the
    // partition's last stable offset (the coordinator writes the commit markers after it answers), so a read
    // that ends short of a chunk tries again briefly before calling it missing.
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.readOnce(planId, ref, cacheKey);
      } catch (e) {
        if (!isLedgerError(e, 'NOT_FOUND') || attempt >= READ_AFTER_COMMIT_TRIES) throw e;
        await sleep(25 * attempt);
      }
    }
  }

  private async readOnce(planId: string, ref: BlobRef, cacheKey: string): Promise<string> {
    const partition = partitionFor(planId, this.o.partitions);
    const found = await this.o.admin.fetchTopicOffsetsByTimestamp(this.o.topic, ref.at);
    const from = found.find((f) => f.partition === partition)?.offset ?? '0';
    const chunks: Array<Buffer | undefined> = new Array<Buffer | undefined>(ref.chunks).fill(undefined);
    let have = 0;
    const wanted = new Map(Array.from({ length: ref.chunks }, (_, i) => [chunkKey(planId, ref.sha256, i), i] as const));
    await this.o.kafka.readToEnd({
      topic: this.o.topic,
      partitions: [partition],
      from: new Map([[partition, from]]),
      isComplete: () => have === ref.chunks,
      onRecords: (records) => {
        for (const r of records) {
          const i = r.key ? wanted.get(r.key.toString()) : undefined;
          if (i === undefined) continue;
          if (r.value === null) {
            if (chunks[i] !== undefined) have--;
            chunks[i] = undefined;
          } else {
            if (chunks[i] === undefined) have++;
            chunks[i] = r.value;
          }
        }
      },
    });
    const missing = chunks.findIndex((c) => c === undefined);
    if (missing >= 0) throw new LedgerError('NOT_FOUND', `payload ${ref.sha256} of plan ${planId}: chunk ${missing} of ${ref.chunks} is not in ${this.o.topic} (erased, or never written)`, { planId, sha256: ref.sha256 });
    const data = Buffer.concat(chunks as Buffer[]);
    if (data.length !== ref.bytes || sha256Hex(data) !== ref.sha256) {
      throw new LedgerError('INTEGRITY', `payload ${ref.sha256} of plan ${planId} does not match its reference (${data.length} bytes read, ${ref.bytes} expected)`, { planId, sha256: ref.sha256 });
    }
    const text = data.toString('utf8');
    this.cache.set(cacheKey, text);
    return text;
  }

  /** Drops what the cache holds of a plan (after its erasure). */
  forget(planId: string): void {
    for (const k of [...this.cache.keys()]) if (k.startsWith(`${planId}:`)) this.cache.delete(k);
  }
}

/**
 * A copy of `state` with every payload stored by reference read back whole (item inputs, outputs of the
 * item and of each attempt, the latest checkpoint, evidence); the state itself when it holds none. What a
 * reader shows; the log, the chain and the digests hold the references.
 */
export async function resolvePayloads<S extends PlanStateLike>(reader: BlobReader, state: S, open?: (json: string) => string): Promise<S> {
  const items = state.items as Record<string, ItemLike>;
  const refs = (it: ItemLike) => [it.inputJson, it.outputJson, it.checkpoint?.stateJson, ...it.attempts.map((a) => a.outputJson), ...(it.evidence ?? []).map((e) => e.valueJson)].some((j) => parseRef(j) !== undefined);
  // With `open` (decryption), every payload is read; without, only the references.
  const ids = open ? Object.keys(items) : Object.keys(items).filter((id) => refs(items[id]!));
  if (!ids.length) return state;
  // A payload that cannot be read (erased, forged, corrupt) stays a reference: the state is still shown,
  // and `verify` names the payload; a broker outage still throws.
  const read = async (json: string | null): Promise<string | null> => {
    if (json === null) return null;
    let text: string;
    try {
      text = await reader.resolve(state.planId, json);
    } catch (e) {
      if (isLedgerError(e, 'NOT_FOUND') || isLedgerError(e, 'INTEGRITY')) return json;
      throw e;
    }
    return open ? open(text) : text;
  };
  const copy: Record<string, ItemLike> = { ...items };
  for (const id of ids) {
    const it = items[id]!;
    copy[id] = {
      ...it,
      inputJson: (await read(it.inputJson))!,
      outputJson: await read(it.outputJson),
      attempts: await Promise.all(it.attempts.map(async (a) => ({ ...a, outputJson: await read(a.outputJson) }))),
      ...(it.checkpoint ? { checkpoint: { ...it.checkpoint, stateJson: (await read(it.checkpoint.stateJson))! } } : {}),
      ...(it.evidence ? { evidence: await Promise.all(it.evidence.map(async (e) => ({ ...e, valueJson: (await read(e.valueJson))! }))) } : {}),
    };
  }
  return { ...state, items: copy };
}

interface ItemLike {
  inputJson: string;
  outputJson: string | null;
  attempts: Array<{ outputJson: string | null }>;
  checkpoint?: { stateJson: string };
  evidence?: Array<{ valueJson: string }>;
}

interface PlanStateLike {
  planId: string;
  items: object;
}
