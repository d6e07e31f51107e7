/**
 * Executors announce themselves on `<prefix>.plan-executors` (docs/guides/running-executors.md#who-runs):
 * what each one serves and that it is still alive. Pure: records in, records out, time as data.
 *
 * Two keys per executor, JSON values (like the other records outside the ledger's history: erasure
 * records, plan keys), never Avro through the registry: an announcement is not a fact of any plan, is
 * never replayed or hashed, and a reader must see who runs while the registry is down.
 *
 * - `announce:<executorId>` — {@link ExecutorAnnouncement}: version, host, pid, tools, agents, start time
 *   and heartbeat interval. Written at start; the one record that can be large (thousands of tools).
 * - `heartbeat:<executorId>` — {@link ExecutorHeartbeat}: the partitions it owns now. Written every
 *   heartbeat interval and on every change of its partitions; small, so a reader reads past few bytes.
 *
 * A clean stop writes a tombstone on both keys. A heartbeat's age is measured from its record's
 * timestamp, which the broker stamps (`LogAppendTime`), against the reader's clock; past
 * {@link staleAfterMs} the executor is stale: not counted as serving its tools.
 */

/** The record format this code writes and reads; a reader meeting a newer one flags it. */
export const ANNOUNCEMENT_FORMAT = 1;
/** A heartbeat older than this many intervals is stale: the executor missed three in a row. */
export const STALE_AFTER_HEARTBEATS = 3;
/**
 * The largest announcement a reader takes (and a writer writes: past it, the writer lists the tools that
 * fit and counts the rest in `toolsOmitted`). 256 KiB holds thousands of tool names.
 */
export const MAX_ANNOUNCEMENT_BYTES = 256 * 1024;
/** The longest executor id, host name, version or tool name a reader takes. */
export const MAX_NAME_CHARS = 1024;

export const ANNOUNCE_KEY = 'announce:';
export const HEARTBEAT_KEY = 'heartbeat:';

export interface ExecutorAnnouncement {
  readonly type: 'ExecutorAnnounced';
  readonly format: number;
  readonly executorId: string;
  /** plan-ledger's version (package.json) the executor runs. */
  readonly version: string;
  readonly host: string;
  readonly pid: number;
  /** ISO-8601, the executor's clock. */
  readonly startedAt: string;
  /** How often it heartbeats (ms): the reader's stale bound is {@link STALE_AFTER_HEARTBEATS} of these. */
  readonly heartbeatMs: number;
  /** The tools it serves, sorted. */
  readonly tools: readonly string[];
  /** Tools left out to keep the record under {@link MAX_ANNOUNCEMENT_BYTES} (0 when all are listed). */
  readonly toolsOmitted: number;
  /** The agents it serves (its `agent:<name>` turn tools), sorted. */
  readonly agents: readonly string[];
}

export interface ExecutorHeartbeat {
  readonly type: 'ExecutorHeartbeat';
  readonly format: number;
  readonly executorId: string;
  /** ISO-8601, the executor's clock (the age is measured from the record's broker timestamp). */
  readonly at: string;
  /** The partitions of the commands topic it owns now, sorted. */
  readonly partitions: readonly number[];
}

/** A record of the topic as the reader takes it: its key, value and broker timestamp. */
export interface AnnouncementRecord {
  readonly key: Buffer | string | null;
  readonly value: Buffer | null;
  readonly offset: string;
  /** Milliseconds since the epoch (the broker's, on a LogAppendTime topic). */
  readonly timestamp: string;
}

/** An executor as a reader sees it: its announcement (without the record's type and format), the partitions of its last heartbeat, and its liveness. */
export interface ExecutorInfo extends Omit<ExecutorAnnouncement, 'type' | 'format'>, Pick<ExecutorHeartbeat, 'partitions'> {
  /** When the broker took its last heartbeat (ISO-8601); its announcement's, before the first heartbeat. */
  readonly lastHeartbeatAt: string;
  /** The last heartbeat's age when read (ms, never negative). */
  readonly heartbeatAgeMs: number;
  /** The bound its age is held to (ms). */
  readonly staleAfterMs: number;
  readonly live: boolean;
  /** Why it is not live (absent when live). */
  readonly staleReason?: string;
}

/** A record the reader could not take, and why. */
export interface InvalidAnnouncement {
  /** The record's key as text (null when it had none), cut to 200 characters. */
  readonly key: string | null;
  readonly offset: string;
  readonly reason: string;
}

export interface ExecutorList {
  /** When it was read (ISO-8601, the reader's clock). */
  readonly at: string;
  readonly topic: string;
  readonly live: ExecutorInfo[];
  readonly stale: ExecutorInfo[];
  readonly invalid: InvalidAnnouncement[];
}

/** The age past which an executor that heartbeats every `heartbeatMs` is stale. */
export function staleAfterMs(heartbeatMs: number): number {
  return STALE_AFTER_HEARTBEATS * heartbeatMs;
}

/** Whether a heartbeat `ageMs` old is live under `boundMs`, and why not. */
export function liveness(ageMs: number, boundMs: number): { live: true } | { live: false; reason: string } {
  if (ageMs <= boundMs) return { live: true };
  return { live: false, reason: `no heartbeat for ${secondsText(ageMs)} (bound ${secondsText(boundMs)})` };
}

function secondsText(ms: number): string {
  return ms < 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms / 1000)} s`;
}

/** The agents an executor's tools serve: the names of its `agent:<name>` turn tools. */
export function agentsOf(tools: readonly string[]): string[] {
  return tools.filter((t) => t.startsWith('agent:') && t.length > 'agent:'.length).map((t) => t.slice('agent:'.length)).sort();
}

/**
 * The announcement record of an executor. Past {@link MAX_ANNOUNCEMENT_BYTES} it lists the tools that fit
 * (in name order) and counts the others in `toolsOmitted`, so a reader never has to refuse it.
 */
export function announcementRecord(a: Omit<ExecutorAnnouncement, 'type' | 'format' | 'toolsOmitted' | 'agents'>): { key: string; value: string; announcement: ExecutorAnnouncement } {
  const tools = [...new Set(a.tools)].sort();
  const build = (listed: string[]): ExecutorAnnouncement => ({
    type: 'ExecutorAnnounced',
    format: ANNOUNCEMENT_FORMAT,
    executorId: a.executorId,
    version: a.version,
    host: a.host,
    pid: a.pid,
    startedAt: a.startedAt,
    heartbeatMs: a.heartbeatMs,
    tools: listed,
    toolsOmitted: tools.length - listed.length,
    agents: agentsOf(tools),
  });
  let announcement = build(tools);
  let value = JSON.stringify(announcement);
  if (Buffer.byteLength(value) > MAX_ANNOUNCEMENT_BYTES) {
    // Keep the names that fit, with room for the agents and the count.
    const budget = MAX_ANNOUNCEMENT_BYTES - Buffer.byteLength(JSON.stringify(build([]))) - 64;
    const listed: string[] = [];
    let used = 0;
    for (const t of tools) {
      const cost = Buffer.byteLength(JSON.stringify(t)) + 1;
      if (used + cost > budget) break;
      listed.push(t);
      used += cost;
    }
    announcement = build(listed);
    value = JSON.stringify(announcement);
  }
  return { key: ANNOUNCE_KEY + a.executorId, value, announcement };
}

export function heartbeatRecord(executorId: string, at: number, partitions: readonly number[]): { key: string; value: string } {
  const hb: ExecutorHeartbeat = { type: 'ExecutorHeartbeat', format: ANNOUNCEMENT_FORMAT, executorId, at: new Date(at).toISOString(), partitions: [...partitions].sort((x, y) => x - y) };
  return { key: HEARTBEAT_KEY + executorId, value: JSON.stringify(hb) };
}

/** The tombstones of a clean stop: both keys. */
export function stopRecords(executorId: string): Array<{ key: string; value: null }> {
  return [
    { key: HEARTBEAT_KEY + executorId, value: null },
    { key: ANNOUNCE_KEY + executorId, value: null },
  ];
}

type Decoded<T> = { ok: true; value: T } | { ok: false; reason: string };

const isName = (v: unknown): v is string => typeof v === 'string' && v.length > 0 && v.length <= MAX_NAME_CHARS;
const isTime = (v: unknown): v is string => typeof v === 'string' && v.length <= 64 && Number.isFinite(Date.parse(v));

/** Parses a JSON record of the expected type; the reason names what is wrong. */
function parseRecord(value: Buffer, type: string, executorId: string): Decoded<Record<string, unknown>> {
  let r: unknown;
  try {
    r = JSON.parse(value.toString('utf8'));
  } catch {
    return { ok: false, reason: 'not JSON' };
  }
  if (typeof r !== 'object' || r === null || Array.isArray(r)) return { ok: false, reason: 'not a JSON object' };
  const o = r as Record<string, unknown>;
  if (o.type !== type) return { ok: false, reason: `type ${JSON.stringify(o.type ?? null)?.slice(0, 60)}, expected ${type}` };
  if (typeof o.format !== 'number' || !Number.isInteger(o.format)) return { ok: false, reason: 'no format number' };
  if (o.format > ANNOUNCEMENT_FORMAT) return { ok: false, reason: `format ${o.format} is newer than this reader's ${ANNOUNCEMENT_FORMAT}` };
  if (o.executorId !== executorId) return { ok: false, reason: `executorId ${JSON.stringify(o.executorId)?.slice(0, 60)} does not match its key` };
  return { ok: true, value: o };
}

export function decodeAnnouncement(executorId: string, value: Buffer): Decoded<ExecutorAnnouncement> {
  if (value.length > MAX_ANNOUNCEMENT_BYTES) return { ok: false, reason: `announcement of ${value.length} bytes is over the ${MAX_ANNOUNCEMENT_BYTES}-byte bound` };
  const p = parseRecord(value, 'ExecutorAnnounced', executorId);
  if (!p.ok) return p;
  const o = p.value;
  if (!isName(o.version)) return { ok: false, reason: 'version is not a name' };
  if (!isName(o.host)) return { ok: false, reason: 'host is not a name' };
  if (typeof o.pid !== 'number' || !Number.isSafeInteger(o.pid) || o.pid < 0) return { ok: false, reason: 'pid is not a process id' };
  if (!isTime(o.startedAt)) return { ok: false, reason: 'startedAt is not a time' };
  if (typeof o.heartbeatMs !== 'number' || !Number.isSafeInteger(o.heartbeatMs) || o.heartbeatMs <= 0) return { ok: false, reason: 'heartbeatMs is not a positive integer' };
  if (!Array.isArray(o.tools) || !o.tools.every(isName)) return { ok: false, reason: 'tools is not a list of names' };
  const omitted = o.toolsOmitted ?? 0;
  if (typeof omitted !== 'number' || !Number.isSafeInteger(omitted) || omitted < 0) return { ok: false, reason: 'toolsOmitted is not a count' };
  const tools = [...new Set(o.tools as string[])].sort();
  return {
    ok: true,
    value: {
      type: 'ExecutorAnnounced',
      format: o.format as number,
      executorId,
      version: o.version,
      host: o.host,
      pid: o.pid,
      startedAt: o.startedAt,
      heartbeatMs: o.heartbeatMs,
      tools,
      toolsOmitted: omitted,
      agents: agentsOf(tools),
    },
  };
}

/** A heartbeat lists at most this many partitions (the plan topics' partition limit). */
const MAX_PARTITIONS = 10_000;

export function decodeHeartbeat(executorId: string, value: Buffer): Decoded<ExecutorHeartbeat> {
  if (value.length > 64 * 1024) return { ok: false, reason: `heartbeat of ${value.length} bytes is over the 65536-byte bound` };
  const p = parseRecord(value, 'ExecutorHeartbeat', executorId);
  if (!p.ok) return p;
  const o = p.value;
  if (!isTime(o.at)) return { ok: false, reason: 'at is not a time' };
  if (!Array.isArray(o.partitions) || o.partitions.length > MAX_PARTITIONS || !o.partitions.every((n) => Number.isSafeInteger(n) && (n as number) >= 0)) {
    return { ok: false, reason: 'partitions is not a list of partition numbers' };
  }
  return { ok: true, value: { type: 'ExecutorHeartbeat', format: o.format as number, executorId, at: o.at, partitions: [...(o.partitions as number[])].sort((x, y) => x - y) } };
}

/** Foreign keys (and keyless records) a reader keeps to report; past it they are only counted. */
const MAX_FOREIGN_KEYS = 100;

function keyText(key: Buffer | string | null): string | null {
  if (key === null) return null;
  return (typeof key === 'string' ? key : key.toString('utf8')).slice(0, 200);
}

/**
 * Folds the records of the topic, in log order, into the latest record per key, as compaction will
 * (a tombstone removes its key). The map is small: one or two entries per executor, plus foreign keys.
 */
export class AnnouncementFold {
  private readonly latest = new Map<string, AnnouncementRecord>();
  private readonly keyless: InvalidAnnouncement[] = [];
  /** Foreign keys held (their latest record, to report), at most {@link MAX_FOREIGN_KEYS}. */
  private foreign = 0;
  /** Records of further foreign keys, counted and not kept: a flood of them costs the reader no memory. */
  private foreignDropped: { count: number; lastOffset: string } | undefined;

  add(r: AnnouncementRecord): void {
    const key = r.key === null ? null : typeof r.key === 'string' ? r.key : r.key.toString('utf8');
    if (key === null) {
      // A record without a key is not one of ours; the first few are enough to report.
      if (this.keyless.length < MAX_FOREIGN_KEYS) this.keyless.push({ key: null, offset: r.offset, reason: 'no key' });
      return;
    }
    const ours = key.startsWith(ANNOUNCE_KEY) || key.startsWith(HEARTBEAT_KEY);
    const held = this.latest.has(key);
    if (r.value === null) {
      if (held && !ours) this.foreign -= 1;
      this.latest.delete(key);
      return;
    }
    if (!ours && !held) {
      if (this.foreign >= MAX_FOREIGN_KEYS) {
        this.foreignDropped = { count: (this.foreignDropped?.count ?? 0) + 1, lastOffset: r.offset };
        return;
      }
      this.foreign += 1;
    }
    this.latest.set(key, r);
  }

  /** The executors as of `now` (the reader's clock), and every latest record that could not be taken. */
  list(now: number, topic: string, opts: { staleAfterMs?: number } = {}): ExecutorList {
    const invalid: InvalidAnnouncement[] = [...this.keyless];
    if (this.foreignDropped) invalid.push({ key: null, offset: this.foreignDropped.lastOffset, reason: `${this.foreignDropped.count} more records of foreign keys, not kept (the first ${MAX_FOREIGN_KEYS} foreign keys are listed)` });
    const announced = new Map<string, { a: ExecutorAnnouncement; at: number }>();
    const beats = new Map<string, { hb: ExecutorHeartbeat; at: number; offset: string; key: string }>();
    for (const [key, r] of this.latest) {
      const value = r.value!;
      const at = Number(r.timestamp);
      if (key.startsWith(ANNOUNCE_KEY) && key.length > ANNOUNCE_KEY.length) {
        const d = decodeAnnouncement(key.slice(ANNOUNCE_KEY.length), value);
        if (d.ok) announced.set(d.value.executorId, { a: d.value, at });
        else invalid.push({ key: keyText(key), offset: r.offset, reason: d.reason });
      } else if (key.startsWith(HEARTBEAT_KEY) && key.length > HEARTBEAT_KEY.length) {
        const d = decodeHeartbeat(key.slice(HEARTBEAT_KEY.length), value);
        if (d.ok) beats.set(d.value.executorId, { hb: d.value, at, offset: r.offset, key });
        else invalid.push({ key: keyText(key), offset: r.offset, reason: d.reason });
      } else {
        invalid.push({ key: keyText(key), offset: r.offset, reason: `foreign key: neither ${ANNOUNCE_KEY}<id> nor ${HEARTBEAT_KEY}<id>` });
      }
    }
    for (const [id, b] of beats) {
      if (!announced.has(id)) invalid.push({ key: keyText(b.key), offset: b.offset, reason: 'a heartbeat without a readable announcement' });
    }
    const live: ExecutorInfo[] = [];
    const stale: ExecutorInfo[] = [];
    for (const [id, { a, at }] of announced) {
      const beat = beats.get(id);
      const last = Math.max(at, beat?.at ?? 0);
      const ageMs = Math.max(0, now - last);
      const bound = opts.staleAfterMs ?? staleAfterMs(a.heartbeatMs);
      const l = liveness(ageMs, bound);
      const info: ExecutorInfo = {
        executorId: id,
        version: a.version,
        host: a.host,
        pid: a.pid,
        tools: a.tools,
        toolsOmitted: a.toolsOmitted,
        agents: a.agents,
        partitions: beat?.hb.partitions ?? [],
        startedAt: a.startedAt,
        heartbeatMs: a.heartbeatMs,
        lastHeartbeatAt: new Date(last).toISOString(),
        heartbeatAgeMs: ageMs,
        staleAfterMs: bound,
        live: l.live,
        ...(l.live ? {} : { staleReason: l.reason }),
      };
      (l.live ? live : stale).push(info);
    }
    const byId = (x: ExecutorInfo, y: ExecutorInfo) => (x.executorId < y.executorId ? -1 : x.executorId > y.executorId ? 1 : 0);
    invalid.sort((x, y) => Number(BigInt(x.offset) - BigInt(y.offset)));
    return { at: new Date(now).toISOString(), topic, live: live.sort(byId), stale: stale.sort(byId), invalid };
  }
}

/** Folds records into the list in one call (tests, and readers that have every record at hand). */
export function executorList(records: Iterable<AnnouncementRecord>, now: number, topic: string, opts: { staleAfterMs?: number } = {}): ExecutorList {
  const fold = new AnnouncementFold();
  for (const r of records) fold.add(r);
  return fold.list(now, topic, opts);
}

// ---------------------------------------------------------------------------------------------------
// The tool check of a new plan

/** What a plan's tools meet among the executors. */
export interface ToolCheck {
  /** The tools the plan's items name (wait items aside), sorted. */
  readonly tools: string[];
  /** Those that no live executor lists. */
  readonly unserved: string[];
  /**
   * False when a live executor left tools out of its announcement (`toolsOmitted`): an unlisted tool may
   * still be served there, so a strict check does not refuse on it.
   */
  readonly conclusive: boolean;
  /** One line for a person, when something is unserved. */
  readonly warning?: string;
}

const quoteList = (names: readonly string[]) => names.map((n) => JSON.stringify(n)).join(', ');

/** How many tools a warning names per executor before "and N more". */
const TOOLS_NAMED = 8;

function servesText(e: ExecutorInfo): string {
  const shown = e.tools.slice(0, TOOLS_NAMED);
  const more = e.tools.length - shown.length + e.toolsOmitted;
  return `${e.executorId} serves ${shown.length ? shown.join(', ') : 'no tool'}${more > 0 ? ` and ${more} more` : ''}`;
}

/**
 * Checks the tools a plan names against the live executors. With no executor live it says so (and how
 * many are stale) instead of listing them.
 */
export function checkTools(tools: Iterable<string>, list: ExecutorList): ToolCheck {
  const wanted = [...new Set([...tools].filter((t) => t.length > 0))].sort();
  const served = new Set(list.live.flatMap((e) => e.tools));
  const unserved = wanted.filter((t) => !served.has(t));
  const conclusive = list.live.every((e) => e.toolsOmitted === 0);
  if (unserved.length === 0) return { tools: wanted, unserved, conclusive };
  const which = `${unserved.length === 1 ? 'tool' : 'tools'} ${quoteList(unserved)}`;
  let warning: string;
  if (list.live.length === 0) {
    const stale = list.stale.length ? ` (${list.stale.length} stale: ${list.stale.slice(0, 5).map((e) => e.executorId).join(', ')}${list.stale.length > 5 ? ', …' : ''})` : '';
    warning = `no live executor has announced itself on ${list.topic}${stale}: nothing serves ${which} now`;
  } else {
    const shown = list.live.slice(0, 5).map(servesText);
    const more = list.live.length > 5 ? `; ${list.live.length - 5} more` : '';
    warning = `${which} ${unserved.length === 1 ? 'is' : 'are'} served by no live executor (live: ${shown.join('; ')}${more})`;
  }
  return { tools: wanted, unserved, conclusive, warning };
}
