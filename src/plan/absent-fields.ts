/**
 * `ItemSpec.secret` was added to the contract after item specs were written everywhere (events, commands,
 * plan files). A reader fills it with its default (null) when it decodes; the domain keeps it absent
 * instead, so a decoded event or command is exactly what was encoded, and an item without secret paths
 * hashes, digests and folds as it did before the field existed.
 *
 * Drops `secret: null` from the item specs a payload carries (`items`, `followUps`, `item`), in place.
 */
export function dropNullItemFields(data: unknown): void {
  if (typeof data !== 'object' || data === null) return;
  const d = data as { items?: unknown; followUps?: unknown; item?: unknown };
  if (hasNullSecret(d.item)) d.item = withoutSecret(d.item);
  for (const list of [d.items, d.followUps]) {
    if (!Array.isArray(list)) continue;
    for (let i = 0; i < list.length; i++) if (hasNullSecret(list[i])) list[i] = withoutSecret(list[i]);
  }
}

function hasNullSecret(spec: unknown): spec is Record<string, unknown> {
  return typeof spec === 'object' && spec !== null && (spec as Record<string, unknown>)['secret'] === null;
}

/** A copy without `secret` (not `delete`, which would leave every item spec a slow dictionary-mode object). */
function withoutSecret(spec: Record<string, unknown>): Record<string, unknown> {
  const { secret: _absent, ...rest } = spec;
  return rest;
}
