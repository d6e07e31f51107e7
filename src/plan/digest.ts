import { createHash, type Hash } from 'node:crypto';
import { canonicalJson } from './canonical.js';
import type { ItemSpec, PlanMode } from './generated/types.js';
import type { PlanState } from './state.js';

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** What an operator reviews of an item: its spec, not its status or attempts. */
export function reviewView(item: ItemSpec): ItemSpec {
  return {
    id: item.id,
    title: item.title,
    why: item.why,
    dependsOn: item.dependsOn,
    tool: item.tool,
    inputJson: item.inputJson,
    retry: item.retry,
  };
}

/** The parts of a plan its digest covers. */
export type DigestSource = Pick<PlanState, 'goal' | 'mode' | 'items' | 'itemOrder'>;

/**
 * Plan digest: sha256 hex of `canonicalJson({ goal, mode, items: itemOrder.map(reviewView) })`.
 * An operator approves a digest; any structural change gives a new one.
 *
 * Computed incrementally: a (pure, deterministic) cache keeps the running hash of the items prefix per
 * `itemOrder` array, so adding the n-th item costs O(1) instead of O(n).
 */
export function planDigest(plan: DigestSource): string {
  return finish(prefix(plan).copy(), plan.mode);
}

/** The digest of `plan` after appending `item` (whose id ends `nextOrder`). */
export function digestAfterAdding(plan: DigestSource, item: ItemSpec, nextOrder: readonly string[]): string {
  const hash = prefix(plan).copy();
  if (plan.itemOrder.length > 0) hash.update(',');
  hash.update(canonicalJson(reviewView(item)), 'utf8');
  prefixCache.set(nextOrder, { goal: plan.goal, hash });
  return finish(hash.copy(), plan.mode);
}

const prefixCache = new WeakMap<readonly string[], { goal: string; hash: Hash }>();

function prefix(plan: DigestSource): Hash {
  const cached = prefixCache.get(plan.itemOrder);
  if (cached !== undefined && cached.goal === plan.goal) return cached.hash;
  const hash = createHash('sha256').update(`{"goal":${canonicalJson(plan.goal)},"items":[`, 'utf8');
  plan.itemOrder.forEach((id, i) => {
    const item = Object.prototype.hasOwnProperty.call(plan.items, id) ? plan.items[id] : undefined;
    if (item === undefined) throw new Error(`itemOrder names unknown item ${id}`);
    if (i > 0) hash.update(',');
    hash.update(canonicalJson(reviewView(item)), 'utf8');
  });
  prefixCache.set(plan.itemOrder, { goal: plan.goal, hash });
  return hash;
}

function finish(hash: Hash, mode: PlanMode | null): string {
  return hash.update(`],"mode":${canonicalJson(mode)}}`, 'utf8').digest('hex');
}

/**
 * Digest of the whole state (snapshot identity): sha256 hex of `canonicalJson(state)`. Same events in,
 * same state digest out, in any process, from scratch or from any snapshot.
 */
export function stateDigest(state: PlanState): string {
  return sha256Hex(canonicalJson(state));
}
