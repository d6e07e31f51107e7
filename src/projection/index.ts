/**
 * The read side's pure and shared parts: the projection of an events partition (the domain's `evolve`,
 * stalls, snapshot policy), snapshots and watermarks, restore from snapshots + tail, plan queries and audit
 * views. The projector, the executor and the CLI build on these.
 */
export * from './snapshot.js';
export * from './snapshot-policy.js';
export * from './poison.js';
export * from './partition.js';
export * from './records.js';
export * from './restore.js';
export * from './dlq-reader.js';
export * from './query.js';
export * from './audit.js';
