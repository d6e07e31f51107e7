/**
 * The executor's fixed bounds, in a module that imports nothing: the executor uses them, and the limits
 * reference (`src/limits.ts`, `docs/reference/limits.md`) reads them without loading the executor. It
 * lives in src/ (not executor/) because the library may not import the floor above it.
 */

/** A command batch that failed this many times at the same command is dead-lettered at that command. */
export const MAX_COMMAND_FAILURES = 3;
/** Partition resets back off exponentially from this, capped at {@link MAX_RESET_BACKOFF_MS}. */
export const RESET_BACKOFF_MS = 500;
export const MAX_RESET_BACKOFF_MS = 30_000;
/** Items a step looks at from a plan's cursor on; the rest of the plan only where a step changed something. */
export const SCAN_WINDOW = 256;
