import { canonicalJson, DEFAULT_RETRY_POLICY, type ItemSpec } from './plan/index.js';
import { LedgerError } from './errors.js';
import type { FollowUpItem } from './tools.js';

/** An item as a person or a planner writes it (plan files, `createPlan`, tool follow-ups). */
export type ItemInput = FollowUpItem;

/**
 * Turns a friendly item into the wire `ItemSpec`: input as canonical JSON, dependsOn defaulted, a partial
 * retry policy completed from the defaults. Field problems surface as VALIDATION errors naming the path.
 */
export function toItemSpec(item: ItemInput, path = 'item'): ItemSpec {
  if (typeof item !== 'object' || item === null) throw new LedgerError('VALIDATION', `${path}: expected an object`, { field: path });
  let inputJson: string;
  try {
    inputJson = canonicalJson(item.input ?? {});
  } catch (e) {
    throw new LedgerError('VALIDATION', `${path}.input: ${(e as Error).message}`, { field: `${path}.input` });
  }
  return {
    id: item.id,
    title: item.title ?? item.id,
    why: item.why ?? '',
    dependsOn: item.dependsOn ?? [],
    // A wait item runs no tool; 'wait' names it in listings when the planner gave none.
    tool: item.tool ?? (item.wait ? 'wait' : ''),
    inputJson,
    retry: item.retry ? { ...DEFAULT_RETRY_POLICY, ...item.retry } : null,
    ...(item.secret !== undefined && item.secret !== null ? { secret: item.secret } : {}),
    ...(item.wait !== undefined && item.wait !== null ? { wait: { signal: item.wait.signal, timeoutMs: item.wait.timeoutMs ?? null, prompt: item.wait.prompt ?? null } } : {}),
  };
}
