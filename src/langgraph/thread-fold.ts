// What a LangGraph thread's plan holds, and its fold into MemorySaver's layout: the item inputs the
// saver writes (a checkpoint, a task's writes), how serialized values are stored in them, and how each
// item applies to a thread's fold as MemorySaver's put / putWrites would have. Used by LedgerSaver (saver.ts).
import type { Checkpoint, SerializerProtocol } from '@langchain/langgraph-checkpoint';
import { LedgerError } from '../errors.js';
import type { PlanState } from '../plan/index.js';

/** A serialized value as an item input holds it: JSON text when the serializer wrote JSON, else base64. */
export type Stored = { json: string } | { type: string; base64: string };

export interface CheckpointInput {
  langgraph: 'checkpoint';
  thread: string;
  ns: string;
  id: string;
  parent: string | null;
  /** The checkpoint with empty channel_values. */
  checkpoint: Stored;
  metadata: Stored;
  /** [channel, version, value]: the channels of newVersions; null for one the checkpoint has no value for. */
  values: Array<[string, string | number, Stored | null]>;
}

export interface WritesInput {
  langgraph: 'writes';
  thread: string;
  ns: string;
  checkpoint: string;
  task: string;
  path: string;
  /** [channel, index, value] */
  writes: Array<[string, number, Stored]>;
}

export type StorageEntry = [Uint8Array, Uint8Array, string | undefined];
export type WriteEntry = [string, string, Uint8Array, string?];

/** One plan folded into MemorySaver's layout, up to `applied` of its `itemOrder`. */
export interface Fold {
  seq: number;
  firstItemId: string;
  applied: number;
  threadId: string | undefined;
  storage: Record<string, Record<string, StorageEntry>>;
  writes: Record<string, Record<string, WriteEntry>>;
  /** Channel values by `JSON([ns, channel, String(version)])`, the first put of each version's. */
  values: Map<string, Stored | null>;
}

const utf8 = new TextEncoder();
const fromUtf8 = new TextDecoder('utf-8', { fatal: true });

export function store(type: string, bytes: Uint8Array): Stored {
  if (type === 'json') {
    try {
      return { json: fromUtf8.decode(bytes) };
    } catch {
      // not UTF-8: kept as bytes below
    }
  }
  return { type, base64: Buffer.from(bytes).toString('base64') };
}

export function load(s: Stored): Uint8Array {
  return 'json' in s ? utf8.encode(s.json) : new Uint8Array(Buffer.from(s.base64, 'base64'));
}

export function loadTyped(serde: SerializerProtocol, s: Stored): Promise<unknown> {
  return serde.loadsTyped('json' in s ? 'json' : s.type, load(s));
}

export function valueKey(ns: string, channel: string, version: string | number): string {
  return JSON.stringify([ns, channel, String(version)]);
}

export function firstItem(plan: PlanState): string {
  return plan.itemOrder[0] ?? '';
}

/** Applies one item of a thread plan to its fold, as MemorySaver's put / putWrites would have. */
export async function applyItem(serde: SerializerProtocol, f: Fold, planId: string, itemId: string, inputJson: string): Promise<void> {
  let input: CheckpointInput | WritesInput;
  try {
    input = JSON.parse(inputJson) as CheckpointInput | WritesInput;
  } catch (e) {
    throw new LedgerError('INTEGRITY', `langgraph: item ${itemId} of plan ${planId} does not hold JSON (${(e as Error).message})`, { planId, itemId });
  }
  if (typeof input !== 'object' || input === null || (input.langgraph !== 'checkpoint' && input.langgraph !== 'writes') || typeof input.thread !== 'string') {
    // Sealed with a plan key this client cannot open (no master key, or another one), or not the saver's.
    const sealed = typeof input === 'object' && input !== null && '$enc' in input;
    const why = sealed ? 'is sealed, and this client has no master key that opens it' : 'is not a checkpoint record';
    throw new LedgerError('INTEGRITY', `langgraph: item ${itemId} of plan ${planId} ${why}`, { planId, itemId, sealed });
  }
  f.threadId ??= input.thread;
  if (input.langgraph === 'checkpoint') {
    for (const [channel, version, value] of input.values) {
      const k = valueKey(input.ns, channel, version);
      if (!f.values.has(k)) f.values.set(k, value);
    }
    // The checkpoint as LangGraph gave it: each channel's value at the version the checkpoint names.
    const checkpoint = (await loadTyped(serde, input.checkpoint)) as Checkpoint;
    checkpoint.channel_values = {};
    for (const [channel, version] of Object.entries(checkpoint.channel_versions ?? {})) {
      const value = f.values.get(valueKey(input.ns, channel, version));
      if (value) checkpoint.channel_values[channel] = await loadTyped(serde, value);
    }
    const [, bytes] = await serde.dumpsTyped(checkpoint);
    const byNs = (f.storage[input.ns] ??= Object.create(null) as Record<string, StorageEntry>);
    byNs[input.id] = [bytes, load(input.metadata), input.parent ?? undefined];
    return;
  }
  const outer = JSON.stringify([input.thread, input.ns, input.checkpoint]);
  const existing = f.writes[outer];
  const next = (f.writes[outer] ??= Object.create(null) as Record<string, WriteEntry>);
  for (const [channel, idx, value] of input.writes) {
    const inner = `${input.task},${idx}`;
    // As MemorySaver: a regular write (idx >= 0) already stored stays; a special channel's is replaced.
    if (idx >= 0 && existing && inner in existing) continue;
    next[inner] = [input.task, channel, load(value), input.path];
  }
}
