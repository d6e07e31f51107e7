// A big plan for the paged read API and the dashboard: created with its first batch of items, grown by
// AddItems batches, then some items run to completion, some fail for good, some stay in progress. Ids are
// `n-<i>` in plan order (so string order is NOT plan order past n-9), and item i depends on item i-1
// except at every tenth (chains of ten).
import type { AnyCommand, ItemSpec } from '../../src/plan/index.js';
import { commands } from './support.js';

export interface BigPlanShape {
  items: number;
  /** Items per CreatePlan / AddItems command. */
  batch: number;
  /** Items 0 .. completed-1 run to completion. */
  completed: number;
  /** Chain heads (i % 10 === 0) whose only attempt fails for good. */
  failed: number[];
  /** Chain heads with an intent recorded and nothing after it. */
  inProgress: number[];
}

export const bigItemId = (i: number) => `n-${i}`;

export function bigItems(from: number, to: number): ItemSpec[] {
  const out: ItemSpec[] = [];
  for (let i = from; i < to; i++) {
    out.push({
      id: bigItemId(i),
      title: `step ${i}`,
      why: `step ${i} is part of the big plan`,
      dependsOn: i % 10 === 0 ? [] : [bigItemId(i - 1)],
      tool: 'noop',
      inputJson: `{"i":${i}}`,
      retry: null,
    });
  }
  return out;
}

let n = 0;
const addItems = (planId: string, items: ItemSpec[]) =>
  ({ commandId: `add-${planId}-${++n}`, planId, issuedAt: 0, actor: 'test', correlationId: `corr-${planId}`, type: 'AddItems', data: { items } }) as AnyCommand;

/** The commands, in batches to decide and append one after another. */
export function bigPlanCommands(planId: string, shape: BigPlanShape): AnyCommand[][] {
  const steps: AnyCommand[][] = [[commands.create(planId, bigItems(0, Math.min(shape.batch, shape.items)), 'execute', { size: 'big' })]];
  for (let from = shape.batch; from < shape.items; from += shape.batch) steps.push([addItems(planId, bigItems(from, Math.min(from + shape.batch, shape.items)))]);
  const run: AnyCommand[] = [];
  for (let i = 0; i < shape.completed; i++) run.push(commands.intent(planId, bigItemId(i)), commands.commit(planId, bigItemId(i), 1), commands.settle(planId, bigItemId(i)));
  for (const i of shape.failed) run.push(commands.intent(planId, bigItemId(i)), commands.commit(planId, bigItemId(i), 1, 'failed_terminal'), commands.settle(planId, bigItemId(i)));
  for (const i of shape.inProgress) run.push(commands.intent(planId, bigItemId(i)));
  for (let i = 0; i < run.length; i += 300) steps.push(run.slice(i, i + 300));
  return steps;
}
