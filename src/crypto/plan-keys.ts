import { LedgerError } from '../errors.js';
import { partitionFor, type KafkaClient, type OutRecord } from '../kafka/index.js';
import { ERASED_MARK } from '../secrets/redact.js';
import { newDataKey, openPayload, parseEnvelope, sealPayload, unwrapDataKey, wrapDataKey } from './envelope.js';

export interface PlanKeyringOptions {
  readonly kafka: KafkaClient;
  /** `<prefix>.plan-keys`. */
  readonly topic: string;
  readonly partitions: number;
  /** The master key (32 bytes): wraps and unwraps the plans' data keys. */
  readonly master: Buffer;
  /** Earlier master keys, during a rotation: they only unwrap (records not re-wrapped yet). */
  readonly previous?: readonly Buffer[];
}

/** What a reader does with a payload of one plan: open (decrypt) it, or seal (encrypt) a new one. */
export interface PlanPayloadKey {
  readonly planId: string;
  /** The plan's data key; undefined when the plan has none (stored in plaintext) or its key was destroyed. */
  readonly key: Buffer | undefined;
  /** The key was there and was destroyed (a tombstone was read): the plan was erased. */
  readonly destroyed: boolean;
}

/** The data key a record holds, unwrapped by the first of `masters` that opens it (INTEGRITY when none does). */
export function unwrapWithAny(masters: readonly Buffer[], planId: string, value: string): Buffer {
  let last: unknown;
  for (const m of masters) {
    try {
      return unwrapDataKey(m, planId, value);
    } catch (e) {
      last = e;
    }
  }
  throw last;
}

/**
 * The plans' data keys, read from the compacted `<prefix>.plan-keys` topic (key: plan id, value: the data
 * key wrapped by the master key; a tombstone destroys it). A partition is read incrementally: a look-up
 * that misses reads the plan's partition from where the last read stopped to its end, so a key written
 * before the command that needs it (the client writes it, acknowledged by all in-sync replicas, before
 * sending CreatePlan) is always found.
 */
export class PlanKeyring {
  private readonly keys = new Map<string, Buffer>();
  private readonly destroyed = new Set<string>();
  private readonly next = new Map<number, string>();
  /** When a read last found no key for a plan (plaintext plans, erased ones): not read again for a while. */
  private readonly absentAt = new Map<string, number>();
  private readonly reading = new Map<number, Promise<void>>();

  constructor(private readonly o: PlanKeyringOptions) {}

  get topic(): string {
    return this.o.topic;
  }

  partitionOf(planId: string): number {
    return partitionFor(planId, this.o.partitions);
  }

  /**
   * The plan's data key, reading its partition of plan-keys on a miss. A plan found without a key (a
   * plaintext plan, an erased one) is not looked for again within `maxAgeMs` (default 5 s), so reads of
   * plaintext plans cost no log read each; `open` looks again at once when it meets an envelope.
   */
  async lookup(planId: string, maxAgeMs = 5000): Promise<PlanPayloadKey> {
    const known = this.keys.get(planId);
    if (known !== undefined) return { planId, key: known, destroyed: false };
    const absent = this.absentAt.get(planId);
    if (absent === undefined || Date.now() - absent >= maxAgeMs) {
      const at = Date.now();
      await this.catchUp(this.partitionOf(planId));
      // A read that was running already may have ended before the key was written: a fresh look reads again.
      if (!this.keys.has(planId) && maxAgeMs === 0) await this.catchUp(this.partitionOf(planId));
      if (!this.keys.has(planId)) this.absentAt.set(planId, at);
    }
    return { planId, key: this.keys.get(planId), destroyed: this.destroyed.has(planId) };
  }

  /**
   * A new data key for a plan and the plan-keys record that stores it (to write, acknowledged, before
   * anything encrypted with it). A plan that has a key keeps it: payloads sealed before stay readable.
   */
  async create(planId: string): Promise<{ key: Buffer; message?: OutRecord & { partition: number } }> {
    const existing = await this.lookup(planId);
    if (existing.key !== undefined) return { key: existing.key };
    const key = newDataKey();
    return { key, message: this.record(planId, key) };
  }

  /** The plan-keys record of a key: key planId, value the wrapped key, on the plan's partition. */
  record(planId: string, key: Buffer): OutRecord & { partition: number } {
    return { key: planId, value: wrapDataKey(this.o.master, planId, key), partition: this.partitionOf(planId) };
  }

  /** Takes a key into the cache once its record is written. */
  remember(planId: string, key: Buffer): void {
    this.keys.set(planId, key);
    this.destroyed.delete(planId);
    this.absentAt.delete(planId);
  }

  /** The tombstone that destroys a plan's key (erasure). */
  tombstone(planId: string): OutRecord & { partition: number } {
    return { key: planId, value: null, partition: this.partitionOf(planId) };
  }

  /** Drops a plan's key from the cache (after its tombstone is written): nothing of it stays in memory. */
  forget(planId: string): void {
    this.keys.delete(planId);
    this.destroyed.add(planId);
  }

  /**
   * Opens a plan's payloads for display: an envelope decrypts with the plan's key; one whose key was
   * destroyed (or is not there) shows as `"[erased]"`; plaintext stays as it is.
   */
  async opener(planId: string): Promise<(json: string) => string> {
    const { key } = await this.lookup(planId);
    return (json) => {
      const e = parseEnvelope(json);
      if (e === undefined) return json;
      if (key === undefined) return JSON.stringify(ERASED_MARK);
      try {
        return openPayload(key, planId, e);
      } catch {
        return JSON.stringify(ERASED_MARK);
      }
    };
  }

  /** Opens a payload for a tool: plaintext as it is; an envelope without its key is NOT_FOUND (erased), one that does not open INTEGRITY. */
  async open(planId: string, json: string): Promise<string> {
    const e = parseEnvelope(json);
    if (e === undefined) return json;
    const { key, destroyed } = await this.lookup(planId, 0);
    if (key === undefined) throw new LedgerError('NOT_FOUND', `the key of plan ${planId} is ${destroyed ? 'destroyed (the plan was erased)' : `not in ${this.o.topic}`}: its payload cannot be read`, { planId });
    return openPayload(key, planId, e);
  }

  /** Seals new payloads of a plan with its key; undefined when the plan has no key (its payloads stay plaintext). */
  async sealer(planId: string): Promise<((json: string) => string) | undefined> {
    const { key } = await this.lookup(planId);
    return key === undefined ? undefined : (json) => sealPayload(key, planId, json);
  }

  private catchUp(partition: number): Promise<void> {
    const running = this.reading.get(partition);
    if (running) return running;
    const p = this.read(partition).finally(() => this.reading.delete(partition));
    this.reading.set(partition, p);
    return p;
  }

  private async read(partition: number): Promise<void> {
    const from = this.next.get(partition);
    const next = await this.o.kafka.readToEnd({
      topic: this.o.topic,
      partitions: [partition],
      ...(from !== undefined ? { from: new Map([[partition, from]]) } : {}),
      onRecords: (records) => {
        for (const r of records) {
          const planId = r.key?.toString('utf8');
          if (!planId) continue;
          if (r.value === null) {
            this.forget(planId);
            continue;
          }
          try {
            this.remember(planId, unwrapWithAny([this.o.master, ...(this.o.previous ?? [])], planId, r.value.toString('utf8')));
          } catch {
            // Wrapped by another master key, or not a key: this plan's payloads stay unreadable here.
          }
        }
      },
    });
    const n = next.get(partition);
    if (n !== undefined) this.next.set(partition, n);
  }
}
