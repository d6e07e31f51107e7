import { canonicalJson, getItem, type ItemState, type PlanEvent, type PlanState } from '../plan/index.js';

/** What a secret value shows as wherever a plan is shown (logs, API, dashboard, CLI). */
export const SECRET_MARK = '[secret]';

/** What a payload whose plan key was destroyed (an erased plan) shows as. */
export const ERASED_MARK = '[erased]';

/** The secret paths of an item: its `secret` list, or none. */
export function secretPaths(item: { secret?: readonly string[] | null } | undefined): readonly string[] {
  return item?.secret ?? [];
}

/**
 * `json` with the value at each dotted path replaced by `"[secret]"`. A segment names an object key or an
 * array index; on an array, a segment that is not an index applies to every element (`cards.number`).
 * A path that does not exist changes nothing. Text that is not a JSON object or array (a reference, an
 * encrypted envelope, a scalar) is returned as it is: it holds no readable secret field.
 *
 * @example redactJson('{"card":{"cvc":"123","number":"4111"},"amount":5}', ['card.number'])
 *   // '{"amount":5,"card":{"cvc":"123","number":"[secret]"}}'
 */
export function redactJson(json: string, paths: readonly string[]): string;
export function redactJson(json: string | null, paths: readonly string[]): string | null;
export function redactJson(json: string | null, paths: readonly string[]): string | null {
  if (json === null || paths.length === 0) return json;
  const first = json.trimStart()[0];
  if (first !== '{' && first !== '[') return json;
  if (json.startsWith('{"$blob":') || json.startsWith('{"$enc":')) return json;
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return json;
  }
  let changed = false;
  for (const path of paths) changed = redactPath(value, path.split('.'), 0) || changed;
  return changed ? canonicalJson(value) : json;
}

function redactPath(node: unknown, segments: readonly string[], at: number): boolean {
  if (typeof node !== 'object' || node === null) return false;
  const seg = segments[at]!;
  const last = at === segments.length - 1;
  if (Array.isArray(node)) {
    if (/^(0|[1-9]\d*)$/.test(seg)) {
      const i = Number(seg);
      if (i >= node.length) return false;
      if (last) {
        node[i] = SECRET_MARK;
        return true;
      }
      return redactPath(node[i], segments, at + 1);
    }
    let any = false;
    for (const el of node) any = redactPath(el, segments, at) || any;
    return any;
  }
  const o = node as Record<string, unknown>;
  if (!Object.prototype.hasOwnProperty.call(o, seg)) return false;
  if (last) {
    o[seg] = SECRET_MARK;
    return true;
  }
  return redactPath(o[seg], segments, at + 1);
}

/** An item with `f` applied to every payload it holds (input, outputs of the item and of each attempt, checkpoint, evidence). */
export function mapItemPayloads<I extends ItemState>(item: I, f: (json: string) => string): I {
  return {
    ...item,
    inputJson: f(item.inputJson),
    outputJson: item.outputJson === null ? null : f(item.outputJson),
    attempts: item.attempts.map((a) => (a.outputJson === null ? a : { ...a, outputJson: f(a.outputJson) })),
    ...(item.checkpoint ? { checkpoint: { ...item.checkpoint, stateJson: f(item.checkpoint.stateJson) } } : {}),
    ...(item.evidence ? { evidence: item.evidence.map((e) => ({ ...e, valueJson: f(e.valueJson) })) } : {}),
  };
}

/** An event with `f` applied to the payload it carries (an added item's input, a result's output, a checkpoint, evidence), told the item's id. */
export function mapEventPayloads<E extends PlanEvent>(event: E, f: (json: string, itemId: string) => string): E {
  switch (event.type) {
    case 'ItemAdded':
      return { ...event, data: { ...event.data, item: { ...event.data.item, inputJson: f(event.data.item.inputJson, event.data.item.id) } } } as E;
    case 'ResultCommitted':
      return event.data.outputJson === null ? event : ({ ...event, data: { ...event.data, outputJson: f(event.data.outputJson, event.data.itemId) } } as E);
    case 'ItemCheckpointed':
      return { ...event, data: { ...event.data, stateJson: f(event.data.stateJson, event.data.itemId) } } as E;
    case 'EvidenceRecorded':
      return { ...event, data: { ...event.data, valueJson: f(event.data.valueJson, event.data.itemId) } } as E;
    case 'ItemInherited':
      return event.data.outputJson === null ? event : ({ ...event, data: { ...event.data, outputJson: f(event.data.outputJson, event.data.itemId) } } as E);
    case 'ItemSignalled':
      return { ...event, data: { ...event.data, dataJson: f(event.data.dataJson, event.data.itemId) } } as E;
    default:
      return event;
  }
}

/** An item with every payload it shows redacted by its secret paths. */
export function redactItem<I extends ItemState>(item: I): I {
  const paths = secretPaths(item);
  return paths.length === 0 ? item : mapItemPayloads(item, (j) => redactJson(j, paths));
}

/** An item as it may be shown: payloads read with `open` (when given), then its secret fields redacted. */
export function showItem<I extends ItemState>(item: I, open?: (json: string) => string): I {
  const paths = secretPaths(item);
  if (paths.length === 0 && open === undefined) return item;
  return mapItemPayloads(item, (j) => redactJson(open ? open(j) : j, paths));
}

/**
 * A plan as it may be shown: each payload first read with `open` (decrypted, when the reader holds the
 * plan's key), then its item's secret fields redacted. The plan itself when there is nothing to do.
 */
export function showPlan<S extends PlanState>(state: S, open?: (json: string) => string): S {
  let items: Record<string, ItemState> | undefined;
  for (const id of state.itemOrder) {
    const it = getItem(state, id);
    if (it === undefined) continue;
    const paths = secretPaths(it);
    if (paths.length === 0 && open === undefined) continue;
    items ??= { ...state.items };
    items[id] = mapItemPayloads(it, (j) => redactJson(open ? open(j) : j, paths));
  }
  return items === undefined ? state : { ...state, items };
}

/** A copy of the plan with the secret fields of its items redacted; the plan itself when no item has any. */
export function redactPlan<S extends PlanState>(state: S): S {
  return showPlan(state);
}

/**
 * Events as they may be shown: payloads read with `open` (when given), then redacted by the secret paths
 * of the item they belong to — from the events' own ItemAdded, else from `state`. The hashes stay as
 * recorded: a shown event is a view, `verify` reads the log.
 */
export function showEvents<E extends PlanEvent>(events: readonly E[], state: PlanState | undefined, open?: (json: string) => string): E[] {
  const added = new Map<string, readonly string[]>();
  for (const e of events) if (e.type === 'ItemAdded' && secretPaths(e.data.item).length) added.set(e.data.item.id, secretPaths(e.data.item));
  const of = (itemId: string) => added.get(itemId) ?? (state ? secretPaths(getItem(state, itemId)) : []);
  return events.map((e) => {
    if (open === undefined && of(itemOfEvent(e) ?? '').length === 0) return e;
    return mapEventPayloads(e, (j, itemId) => redactJson(open ? open(j) : j, of(itemId)));
  });
}

function itemOfEvent(e: PlanEvent): string | undefined {
  const d = e.data as { itemId?: unknown };
  return e.type === 'ItemAdded' ? e.data.item.id : typeof d.itemId === 'string' ? d.itemId : undefined;
}

/** An event with its payload redacted by the secret paths of its item (`secretsOf`; an ItemAdded carries its own). */
export function redactEvent<E extends PlanEvent>(event: E, secretsOf: (itemId: string) => readonly string[]): E {
  const own = event.type === 'ItemAdded' ? secretPaths(event.data.item) : undefined;
  const paths = own ?? secretsOf(itemOfEvent(event) ?? '');
  return paths.length === 0 ? event : mapEventPayloads(event, (j) => redactJson(j, paths));
}

/** {@link showEvents} without decryption. */
export function redactEvents<E extends PlanEvent>(events: readonly E[], state: PlanState | undefined): E[] {
  return showEvents(events, state);
}

/**
 * Redacts a stream of events of many plans (a tail): remembers the secret paths of every ItemAdded it
 * sees. An item whose ItemAdded came before the stream started has no known paths here; a reader that
 * starts mid-plan should fold the plan's history first (the tail reads history first by default).
 */
export class SecretTracker {
  private readonly paths = new Map<string, Map<string, readonly string[]>>();

  show<E extends PlanEvent>(event: E): E {
    if (event.type === 'ItemAdded' && secretPaths(event.data.item).length) {
      let items = this.paths.get(event.planId);
      if (!items) this.paths.set(event.planId, (items = new Map()));
      items.set(event.data.item.id, secretPaths(event.data.item));
    }
    const items = this.paths.get(event.planId);
    return items === undefined ? event : redactEvent(event, (itemId) => items.get(itemId) ?? []);
  }

  forget(planId: string): void {
    this.paths.delete(planId);
  }
}
