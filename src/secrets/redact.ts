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

/** An item with every payload it shows (input, outputs, checkpoint, evidence) redacted by its secret paths. */
export function redactItem<I extends ItemState>(item: I): I {
  const paths = secretPaths(item);
  if (paths.length === 0) return item;
  return {
    ...item,
    inputJson: redactJson(item.inputJson, paths),
    outputJson: redactJson(item.outputJson, paths),
    attempts: item.attempts.map((a) => (a.outputJson === null ? a : { ...a, outputJson: redactJson(a.outputJson, paths) })),
    ...(item.checkpoint ? { checkpoint: { ...item.checkpoint, stateJson: redactJson(item.checkpoint.stateJson, paths) } } : {}),
    ...(item.evidence ? { evidence: item.evidence.map((e) => ({ ...e, valueJson: redactJson(e.valueJson, paths) })) } : {}),
  };
}

/** A copy of the plan with the secret fields of its items redacted; the plan itself when no item has any. */
export function redactPlan<S extends PlanState>(state: S): S {
  let items: Record<string, ItemState> | undefined;
  for (const id of state.itemOrder) {
    const it = getItem(state, id);
    if (it === undefined || secretPaths(it).length === 0) continue;
    items ??= { ...state.items };
    items[id] = redactItem(it);
  }
  return items === undefined ? state : { ...state, items };
}

/**
 * An event as it may be shown: the payloads it carries (an added item's input, a result's output and
 * follow-up inputs, a checkpoint, evidence) redacted by the secret paths of the item they belong to.
 * `secretsOf` gives an existing item's paths (from the plan's state); an ItemAdded carries its own.
 * The event's hash is left as recorded: a shown event is a view, `verify` reads the log.
 */
export function redactEvent<E extends PlanEvent>(event: E, secretsOf: (itemId: string) => readonly string[]): E {
  switch (event.type) {
    case 'ItemAdded': {
      const paths = secretPaths(event.data.item);
      return paths.length === 0 ? event : ({ ...event, data: { ...event.data, item: { ...event.data.item, inputJson: redactJson(event.data.item.inputJson, paths) } } } as E);
    }
    case 'ResultCommitted': {
      const paths = secretsOf(event.data.itemId);
      return paths.length === 0 || event.data.outputJson === null ? event : ({ ...event, data: { ...event.data, outputJson: redactJson(event.data.outputJson, paths) } } as E);
    }
    case 'ItemCheckpointed': {
      const paths = secretsOf(event.data.itemId);
      return paths.length === 0 ? event : ({ ...event, data: { ...event.data, stateJson: redactJson(event.data.stateJson, paths) } } as E);
    }
    case 'EvidenceRecorded': {
      const paths = secretsOf(event.data.itemId);
      return paths.length === 0 ? event : ({ ...event, data: { ...event.data, valueJson: redactJson(event.data.valueJson, paths) } } as E);
    }
    default:
      return event;
  }
}

/** {@link redactEvent} with the secret paths of a plan's items (and of items added by the events themselves). */
export function redactEvents<E extends PlanEvent>(events: readonly E[], state: PlanState | undefined): E[] {
  const added = new Map<string, readonly string[]>();
  for (const e of events) if (e.type === 'ItemAdded' && secretPaths(e.data.item).length) added.set(e.data.item.id, secretPaths(e.data.item));
  const of = (itemId: string) => added.get(itemId) ?? (state ? secretPaths(getItem(state, itemId)) : []);
  return events.map((e) => redactEvent(e, of));
}
