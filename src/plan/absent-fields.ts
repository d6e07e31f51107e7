/**
 * `ItemSpec.secret` and `ItemSpec.wait` were added to the contract after item specs were written everywhere
 * (events, commands, plan files). A reader fills them with their default (null) when it decodes; the domain
 * keeps them absent instead, so a decoded event or command is exactly what was encoded, and an item without
 * them hashes, digests and folds as it did before the fields existed.
 *
 * Drops `secret: null` and `wait: null` from the item specs a payload carries (`items`, `followUps`, `item`), in place.
 */
export function dropNullItemFields(data: unknown): void {
  if (typeof data !== 'object' || data === null) return;
  const d = data as { items?: unknown; followUps?: unknown; item?: unknown; forkedFrom?: unknown; inherited?: unknown };
  // Likewise a plan's fork origin (PlanCreated, CreatePlan) and a CreatePlan's inherited outputs.
  if (d.forkedFrom === null) delete d.forkedFrom;
  if (d.inherited === null) delete d.inherited;
  if (hasNullAdded(d.item)) d.item = withoutNullAdded(d.item);
  for (const list of [d.items, d.followUps]) {
    if (!Array.isArray(list)) continue;
    for (let i = 0; i < list.length; i++) if (hasNullAdded(list[i])) list[i] = withoutNullAdded(list[i]);
  }
}

/** Item spec fields added after the first schema, absent while null. */
export const ADDED_ITEM_FIELDS = ['secret', 'wait'] as const;

function hasNullAdded(spec: unknown): spec is Record<string, unknown> {
  if (typeof spec !== 'object' || spec === null) return false;
  const s = spec as Record<string, unknown>;
  return s['secret'] === null || s['wait'] === null;
}

/** A copy without the null added fields (not `delete`, which would leave every item spec a slow dictionary-mode object). */
function withoutNullAdded(spec: Record<string, unknown>): Record<string, unknown> {
  const { secret, wait, ...rest } = spec;
  return { ...rest, ...(secret != null ? { secret } : {}), ...(wait != null ? { wait } : {}) };
}
