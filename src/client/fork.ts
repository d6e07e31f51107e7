import { LedgerError } from '../errors.js';
import { canonicalJson, evolveAll, isValidId, type ItemSpec, type PlanEvent, type PlanState } from '../plan/index.js';
import type { ForkOptions } from './api.js';

/**
 * What a fork of plan `source` starts from: the seq it forks at (`opts.at`: a seq, or an item id — the
 * point just before that item first started), the source's state there, the items to create (their
 * inputs read back whole, or replaced by `opts.set`) and the outputs the fork inherits (items that had
 * completed). Refuses, as VALIDATION naming the field, a point that is past the head or before the plan
 * existed, a `set` of an item that is not there or had finished, and an inherited output that is stored by
 * reference or sealed (not the fork's to read).
 */
export async function forkPoint(
  source: string,
  events: PlanEvent[],
  opts: ForkOptions,
  topicPrefix: string,
  readPayload: (json: string) => Promise<string>,
): Promise<{ state: PlanState; seq: number; events: PlanEvent[]; specs: ItemSpec[]; inherited: Array<{ itemId: string; outputJson: string | null }> }> {
  const bad = (message: string, field = 'at') => new LedgerError('VALIDATION', message, { field, planId: source });
  const at = opts.at;
  let seqAt: number | undefined;
  let itemAt: string | undefined;
  if (typeof at === 'number') {
    if (!Number.isSafeInteger(at) || at < 1) throw bad(`at must be a seq (an integer >= 1) or an item id, got ${String(at)}`);
    seqAt = at;
  } else if (typeof at === 'string' && /^[0-9]+$/.test(at)) {
    seqAt = Number(at);
    if (!Number.isSafeInteger(seqAt) || seqAt < 1) throw bad(`at must be a seq (an integer >= 1) or an item id, got "${at.slice(0, 64)}"`);
  } else if (typeof at === 'string' && isValidId(at)) {
    itemAt = at;
  } else {
    throw bad(`at must be a seq (an integer >= 1) or an item id (1..128 chars of [A-Za-z0-9._:-]), got ${JSON.stringify(String(at).slice(0, 64))}`);
  }
  const head = evolveAll(undefined, events);
  if (head === undefined || head.status === 'none') throw new LedgerError('NOT_FOUND', `plan ${source} not found on prefix "${topicPrefix}"`, { planId: source });
  if (itemAt !== undefined) {
    if (!Object.prototype.hasOwnProperty.call(head.items, itemAt)) throw bad(`plan ${source} has no item ${itemAt}`);
    const started = events.find((e) => (e.type === 'IntentRecorded' || e.type === 'WaitStarted') && e.data.itemId === itemAt);
    seqAt = started === undefined ? events.length : started.seq - 1;
  }
  const seq = seqAt!;
  if (seq > events.length) throw bad(`plan ${source} has ${events.length} events; at ${seq} is past its head`);
  const state = evolveAll(undefined, events.slice(0, seq));
  if (state === undefined || state.status === 'none') throw bad(`plan ${source} did not exist yet at seq ${seq}`);
  const set = opts.set ?? {};
  for (const id of Object.keys(set)) {
    const it = Object.prototype.hasOwnProperty.call(state.items, id) ? state.items[id] : undefined;
    if (it === undefined) throw bad(`set: the fork has no item ${id} (plan ${source} as of seq ${seq})`, `set.${id}`);
    if (it.status === 'completed') throw bad(`set: item ${id} finished before the fork point; its output is inherited, not run again`, `set.${id}`);
  }
  const inherited: Array<{ itemId: string; outputJson: string | null }> = [];
  const specs: ItemSpec[] = [];
  for (const id of state.itemOrder) {
    const it = state.items[id]!;
    if (it.status === 'completed') {
      // Byte for byte: an output the source stored by reference or sealed with its key is not the fork's to read.
      if (it.outputJson !== null && (await readPayload(it.outputJson)) !== it.outputJson) {
        throw bad(`item ${id}'s output is stored by reference or encrypted in plan ${source}; forks of such outputs are not supported`);
      }
      inherited.push({ itemId: id, outputJson: it.outputJson });
    }
    let inputJson: string;
    if (Object.prototype.hasOwnProperty.call(set, id)) {
      try {
        inputJson = canonicalJson(set[id] === undefined ? {} : set[id]);
      } catch (e) {
        throw bad(`set.${id}: ${(e as Error).message}`, `set.${id}`);
      }
    } else {
      inputJson = await readPayload(it.inputJson);
    }
    specs.push({
      id: it.id,
      title: it.title,
      why: it.why,
      dependsOn: it.dependsOn,
      tool: it.tool,
      inputJson,
      retry: it.retry,
      ...(it.secret != null ? { secret: it.secret } : {}),
      ...(it.wait != null ? { wait: it.wait } : {}),
    });
  }
  return { state, seq, events, specs, inherited };
}
