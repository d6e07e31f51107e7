/**
 * The one backoff of the project's plumbing: the wait before retry number `attempt` (1-based) is `firstMs`,
 * doubled per attempt and capped at `maxMs` — firstMs, 2·firstMs, 4·firstMs … maxMs. Kafka and registry
 * retries, partition resets, snapshot retries and the client's command writes all wait by it. (An item's
 * retry policy is part of the plan's contract, recorded in `retryAt`; `nextRetryAt` in src/plan computes it.)
 */
export function backoffMs(attempt: number, firstMs: number, maxMs: number): number {
  return Math.min(maxMs, firstMs * 2 ** Math.min(Math.max(0, attempt - 1), 52));
}
