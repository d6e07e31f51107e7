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
  if (d.item !== undefined) dropNullSecret(d.item);
  for (const list of [d.items, d.followUps]) if (Array.isArray(list)) for (const it of list) dropNullSecret(it);
}

function dropNullSecret(spec: unknown): void {
  if (typeof spec === 'object' && spec !== null && (spec as Record<string, unknown>)['secret'] === null) delete (spec as Record<string, unknown>)['secret'];
}
