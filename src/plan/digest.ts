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
    // Which fields are secret is part of what an operator approves; an item without any reviews (and
    // digests) exactly as before the field existed.
    ...(item.secret != null && item.secret.length > 0 ? { secret: item.secret } : {}),
    // What a wait item waits for (and how long) is reviewed like a tool and its input.
    ...(item.wait != null ? { wait: item.wait } : {}),
  };
}

/**
 * `canonicalJson(reviewView(item))`, written directly for the usual shape (keys already in sorted order);
 * anything unusual (a non-string, a non-finite number, extra retry fields) takes the generic writer, which
 * gives the same bytes or throws `NOT_CANONICAL`.
 */
export function reviewJson(item: ItemSpec): string {
  const { id, title, why, dependsOn, tool, inputJson, retry, secret, wait } = item;
  if (secret != null && (!Array.isArray(secret) || secret.length > 0)) return canonicalJson(reviewView(item));
  if (wait != null) return canonicalJson(reviewView(item));
  if (typeof id !== 'string' || typeof title !== 'string' || typeof why !== 'string' || typeof tool !== 'string' || typeof inputJson !== 'string') {
    return canonicalJson(reviewView(item));
  }
  if (!Array.isArray(dependsOn)) return canonicalJson(reviewView(item));
  let deps = '[';
  for (let i = 0; i < dependsOn.length; i++) {
    const d: unknown = dependsOn[i];
    if (typeof d !== 'string') return canonicalJson(reviewView(item));
    deps += i === 0 ? JSON.stringify(d) : `,${JSON.stringify(d)}`;
  }
  deps += ']';
  let policy = 'null';
  if (retry !== null) {
    const r = retry as unknown as Record<string, unknown>;
    const n = [r['backoffMultiplier'], r['initialBackoffMs'], r['maxAttempts'], r['maxBackoffMs']];
    if (typeof r !== 'object' || Object.getPrototypeOf(r) !== Object.prototype || Object.keys(r).length !== 4 || !n.every((x) => typeof x === 'number' && Number.isFinite(x))) {
      return canonicalJson(reviewView(item));
    }
    policy = `{"backoffMultiplier":${JSON.stringify(n[0])},"initialBackoffMs":${JSON.stringify(n[1])},"maxAttempts":${JSON.stringify(n[2])},"maxBackoffMs":${JSON.stringify(n[3])}}`;
  }
  return `{"dependsOn":${deps},"id":${JSON.stringify(id)},"inputJson":${JSON.stringify(inputJson)},"retry":${policy},"title":${JSON.stringify(title)},"tool":${JSON.stringify(tool)},"why":${JSON.stringify(why)}}`;
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
  return finish(prefix(plan).hash.copy(), plan.mode);
}

/**
 * The running hash of `{"goal":…,"items":[` and the review views of the first `length` ids of an
 * `itemOrder` array. Item order only grows and item specs never change, so an entry is valid for an array
 * exactly when the lengths agree. An entry may be handed on to the array that extends its own (see
 * `extendDigest`); the array it leaves then no longer matches its length and is recomputed if needed.
 */
interface Prefix {
  goal: string;
  length: number;
  hash: Hash;
}

const prefixes = new WeakMap<readonly string[], Prefix>();

function prefix(plan: DigestSource): Prefix {
  const cached = prefixes.get(plan.itemOrder);
  if (cached !== undefined && cached.goal === plan.goal && cached.length === plan.itemOrder.length) return cached;
  const hash = createHash('sha256').update(`{"goal":${canonicalJson(plan.goal)},"items":[`, 'utf8');
  plan.itemOrder.forEach((id, i) => {
    const item = Object.prototype.hasOwnProperty.call(plan.items, id) ? plan.items[id] : undefined;
    if (item === undefined) throw new Error(`itemOrder names unknown item ${id}`);
    hash.update(i > 0 ? `,${reviewJson(item)}` : reviewJson(item), 'utf8');
  });
  const entry = { goal: plan.goal, length: plan.itemOrder.length, hash };
  prefixes.set(plan.itemOrder, entry);
  return entry;
}

/**
 * Brings the running hash of `plan.itemOrder` (whose last id is `item.id`) up to date after an append, in
 * O(size of the item), so `planDigest(plan)` then costs one hash copy. Used by `evolve`.
 *
 * `previous` is the order before the append: the same array (appended in place by a fold) or the array of
 * the state before. Its running hash moves on to the new array, because a state is almost always extended
 * once (a replay, an executor applying what it decided); a state extended a second time recomputes its
 * hash once.
 */
export function extendDigest(plan: DigestSource, previous: readonly string[], item: ItemSpec): void {
  const order = plan.itemOrder;
  const own = prefixes.get(order);
  if (own !== undefined && own.goal === plan.goal && own.length === order.length - 1) {
    own.hash.update(own.length > 0 ? `,${reviewJson(item)}` : reviewJson(item), 'utf8');
    own.length += 1;
    return;
  }
  if (previous === order || previous.length !== order.length - 1) {
    prefix(plan);
    return;
  }
  const base = prefix({ goal: plan.goal, mode: plan.mode, items: plan.items, itemOrder: previous as string[] });
  base.hash.update(base.length > 0 ? `,${reviewJson(item)}` : reviewJson(item), 'utf8');
  base.length += 1;
  prefixes.set(order, base);
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
