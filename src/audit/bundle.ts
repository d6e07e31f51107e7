import type avsc from 'avsc';
import { buildType, mapperFor, type Mapper } from '../codec/avro.js';
import { LedgerError } from '../errors.js';
import { eventHash, evolveAll, GENESIS_HASH, stateDigest, type PlanEvent, type PlanState } from '../plan/index.js';
import type { PositionedEvent } from './timeline.js';
import { verifyPlan, type PlanVerification } from './verify.js';

export const BUNDLE_FORMAT = 'plan-ledger.bundle/1';

export interface BundleEvent {
  seq: number;
  partition: number;
  offset: string;
  /** Registry id of the writer schema the record was written with (a key of `schemas`). */
  schemaId: number;
  /** `eventHash(event)` recomputed at export: equals `event.hash` when the record was intact. */
  hash: string;
  event: PlanEvent;
}

/**
 * A self-contained export of one plan: every event as JSON, the Avro writer schemas they were written
 * with (by registry id), per-event hashes, the hash-chain head and the final state digest. `verifyBundle`
 * checks it offline.
 */
export interface ExportBundle {
  format: typeof BUNDLE_FORMAT;
  planId: string;
  exportedAt: string;
  source: { topicPrefix: string; topic: string; partition: number };
  schemas: Record<string, object>;
  events: BundleEvent[];
  chain: { genesis: string; head: string; length: number };
  final: { status: string; seq: number; planDigest: string; stateDigest: string };
}

export interface BundleSource {
  planId: string;
  topicPrefix: string;
  topic: string;
  partition: number;
  records: readonly (PositionedEvent & { schemaId: number })[];
  schemas: ReadonlyMap<number, object>;
  exportedAt: number;
}

export function buildBundle(src: BundleSource): ExportBundle {
  const state: PlanState | undefined = evolveAll(undefined, src.records.map((r) => r.event));
  if (!state) throw new LedgerError('NOT_FOUND', `plan ${src.planId} has no events`, { planId: src.planId });
  const last = src.records[src.records.length - 1]!;
  return {
    format: BUNDLE_FORMAT,
    planId: src.planId,
    exportedAt: new Date(src.exportedAt).toISOString(),
    source: { topicPrefix: src.topicPrefix, topic: src.topic, partition: src.partition },
    schemas: Object.fromEntries([...new Set(src.records.map((r) => r.schemaId))].sort((a, b) => a - b).map((id) => [String(id), src.schemas.get(id)!])),
    events: src.records.map((r) => ({ seq: r.event.seq, partition: r.partition, offset: r.offset, schemaId: r.schemaId, hash: eventHash(r.event), event: r.event })),
    chain: { genesis: GENESIS_HASH, head: last.event.hash, length: src.records.length },
    final: { status: state.status, seq: state.seq, planDigest: state.digest, stateDigest: stateDigest(state) },
  };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Structural check of a parsed bundle; names the first bad field. */
function bundleShape(raw: unknown): ExportBundle {
  const bad = (field: string, why: string): never => {
    throw new LedgerError('VALIDATION', `not a plan-ledger bundle: ${field}: ${why}`, { field });
  };
  if (!isObject(raw)) return bad('(root)', 'expected a JSON object');
  if (raw.format !== BUNDLE_FORMAT) bad('format', `expected "${BUNDLE_FORMAT}", got ${JSON.stringify(raw.format)}`);
  if (typeof raw.planId !== 'string') bad('planId', 'expected a string');
  if (!isObject(raw.schemas)) bad('schemas', 'expected an object of schemas by id');
  if (!Array.isArray(raw.events)) bad('events', 'expected an array');
  (raw.events as unknown[]).forEach((e, i) => {
    if (!isObject(e) || !isObject(e.event)) bad(`events[${i}]`, 'expected { seq, schemaId, hash, event }');
    const be = e as Record<string, unknown>;
    if (typeof be.schemaId !== 'number') bad(`events[${i}].schemaId`, 'expected a number');
    if (typeof be.hash !== 'string') bad(`events[${i}].hash`, 'expected a string');
  });
  if (!isObject(raw.chain) || typeof raw.chain.head !== 'string' || typeof raw.chain.length !== 'number') bad('chain', 'expected { head, length }');
  if (!isObject(raw.final) || typeof raw.final.stateDigest !== 'string') bad('final', 'expected { stateDigest, ... }');
  return raw as unknown as ExportBundle;
}

/**
 * Verifies an export bundle with no broker and no registry: each event fits the writer schema recorded for
 * it (and survives an Avro round trip through it), its recomputed hash matches the one recorded, the hash
 * chain is intact from genesis to the recorded head, seq is contiguous, rebuilds agree, and the rebuilt
 * state has the recorded final digest. Names the first broken event.
 *
 * What it cannot see alone: a bundle whose every hash was recomputed by a forger. Compare `chain.head`
 * with a head recorded elsewhere (the live ledger's `verify`, or the erasure record) for that.
 */
export function verifyBundle(raw: unknown): PlanVerification {
  const bundle = bundleShape(raw);
  const mappers = new Map<number, { type: avsc.Type; mapper: Mapper<PlanEvent> } | string>();
  const mapperOf = (id: number) => {
    let m = mappers.get(id);
    if (m === undefined) {
      const schema = bundle.schemas[String(id)];
      try {
        if (!schema) throw new Error(`schema id ${id} is not in the bundle`);
        const type = buildType(schema);
        m = { type, mapper: mapperFor<PlanEvent>(type) };
      } catch (e) {
        m = (e as Error).message;
      }
      mappers.set(id, m);
    }
    return m;
  };

  const schemaProblems: { index: number; reason: string }[] = [];
  const roundTripped: PlanEvent[] = [];
  bundle.events.forEach((be, index) => {
    const m = mapperOf(be.schemaId);
    let again: PlanEvent = be.event;
    if (typeof m === 'string') schemaProblems.push({ index, reason: m });
    else {
      try {
        const paths: string[] = [];
        const avro = m.mapper.toAvro(be.event);
        if (!m.type.isValid(avro, { errorHook: (p) => paths.push(p.join('.') || '(root)') })) {
          throw new Error(`does not fit writer schema ${be.schemaId} at ${paths.join(', ')}`);
        }
        again = m.mapper.fromAvro(m.type.fromBuffer(m.type.toBuffer(avro)));
      } catch (e) {
        schemaProblems.push({ index, reason: (e as Error).message.startsWith('does not fit') ? (e as Error).message : `does not fit writer schema ${be.schemaId}: ${(e as Error).message}` });
      }
    }
    roundTripped.push(again);
    let recomputed: string;
    try {
      recomputed = eventHash(be.event);
    } catch (e) {
      recomputed = `(unhashable: ${(e as Error).message})`;
    }
    if (recomputed !== be.hash || recomputed !== be.event.hash) {
      schemaProblems.push({ index, reason: `content does not match its hash (recorded ${String(be.event.hash).slice(0, 16)}, recomputed ${recomputed.slice(0, 16)})` });
    }
  });
  schemaProblems.sort((a, b) => a.index - b.index);

  return verifyPlan({
    planId: bundle.planId,
    records: bundle.events.map((be) => ({ event: be.event, partition: be.partition, offset: be.offset })),
    roundTripped,
    schemaProblems,
    expected: { head: bundle.chain.head, seq: bundle.chain.length, stateDigest: bundle.final.stateDigest },
  });
}
