import { parseDocument } from 'yaml';
import { z } from 'zod';
import { LedgerError } from '../errors.js';
import type { CreatePlanInput } from '../client/index.js';
import { ID_PATTERN } from '../plan/index.js';

const id = z.string().regex(ID_PATTERN, 'must be 1..128 chars of [A-Za-z0-9._:-]');

const retrySchema = z
  .object({
    maxAttempts: z.number().int().min(1).max(100),
    initialBackoffMs: z.number().int().min(0),
    backoffMultiplier: z.number().min(1),
    maxBackoffMs: z.number().int().min(0),
  })
  .partial()
  .strict();

const itemSchema = z
  .object({
    id,
    title: z.string().min(1).optional(),
    why: z.string().optional(),
    dependsOn: z.array(id).optional(),
    tool: z.string().min(1).optional(),
    input: z.unknown().optional(),
    retry: retrySchema.nullable().optional(),
    secret: z.array(z.string().min(1)).optional(),
    wait: z
      .object({ signal: id, timeoutMs: z.number().int().min(1).nullable().optional(), prompt: z.string().nullable().optional() })
      .strict()
      .optional(),
  })
  .strict()
  .refine((it) => it.tool !== undefined || it.wait !== undefined, { message: 'an item needs a tool, or a wait', path: ['tool'] });

/**
 * A plan file as a person writes it (YAML or JSON). Unknown keys are errors, so a typo such as
 * `depends_on` is reported instead of silently ignored.
 */
export const planFileSchema = z
  .object({
    planId: id.optional(),
    goal: z.string().min(1),
    mode: z.enum(['propose', 'execute']).optional(),
    labels: z.record(z.string(), z.string()).optional(),
    items: z.array(itemSchema).default([]),
  })
  .strict()
  .superRefine((plan, ctx) => {
    const seen = new Map<string, number>();
    plan.items.forEach((item, i) => {
      if (seen.has(item.id)) ctx.addIssue({ code: 'custom', path: ['items', i, 'id'], message: `duplicate item id "${item.id}" (also items[${seen.get(item.id)}])` });
      else seen.set(item.id, i);
    });
    plan.items.forEach((item, i) =>
      item.dependsOn?.forEach((dep, j) => {
        if (!seen.has(dep)) ctx.addIssue({ code: 'custom', path: ['items', i, 'dependsOn', j], message: `unknown item "${dep}"` });
      }),
    );
    const cycle = findCycle(plan.items);
    if (cycle) ctx.addIssue({ code: 'custom', path: ['items', cycle.index, 'dependsOn'], message: `dependency cycle ${cycle.path.join(' -> ')}` });
  });

export type PlanFile = z.infer<typeof planFileSchema>;

/** `['items', 2, 'dependsOn']` -> `items[2].dependsOn`. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const p of path) out += typeof p === 'number' ? `[${p}]` : out ? `.${String(p)}` : String(p);
  return out || '(root)';
}

function findCycle(items: readonly { id: string; dependsOn?: string[] | undefined }[]): { index: number; path: string[] } | undefined {
  const deps = new Map(items.map((it) => [it.id, it.dependsOn ?? []]));
  const state = new Map<string, 'visiting' | 'done'>();
  const stack: string[] = [];
  const visit = (node: string): string[] | undefined => {
    if (state.get(node) === 'done' || !deps.has(node)) return undefined;
    if (state.get(node) === 'visiting') return [...stack.slice(stack.indexOf(node)), node];
    state.set(node, 'visiting');
    stack.push(node);
    for (const d of deps.get(node) ?? []) {
      const c = visit(d);
      if (c) return c;
    }
    stack.pop();
    state.set(node, 'done');
    return undefined;
  };
  for (const it of items) {
    const c = visit(it.id);
    if (c) return { index: items.findIndex((x) => x.id === c[0]), path: c };
  }
  return undefined;
}

/**
 * Parses a plan file (YAML, which includes JSON) and validates it. Every problem is a `VALIDATION`
 * error whose message starts with the file name and the path of the bad field:
 * `plan.yaml: items[2].dependsOn[0]: unknown item "charge"`.
 *
 * @example
 * const plan = parsePlanFile(readFileSync('examples/refund.yaml', 'utf8'), 'examples/refund.yaml');
 * await ledger.createPlan({ ...plan, mode: plan.mode ?? 'execute' });
 */
export function parsePlanFile(text: string, fileName = 'plan file'): PlanFile {
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  const yamlError = doc.errors[0];
  if (yamlError) {
    const pos = yamlError.linePos?.[0];
    const where = pos ? `:${pos.line}:${pos.col}` : '';
    throw new LedgerError('VALIDATION', `${fileName}${where}: not valid YAML/JSON: ${yamlError.message.split('\n')[0]}`, { field: '(root)' });
  }
  const parsed = planFileSchema.safeParse(doc.toJS());
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    let path = issue.path;
    let message = issue.message;
    if (issue.code === 'unrecognized_keys') {
      path = [...issue.path, issue.keys[0] ?? ''];
      message = `unknown field${issue.keys.length > 1 ? `s ${issue.keys.join(', ')}` : ''}`;
    }
    const field = formatPath(path);
    throw new LedgerError('VALIDATION', `${fileName}: ${field}: ${message}`, { field });
  }
  return parsed.data;
}

/** The plan file as `connectLedger().createPlan` takes it. */
export function toCreatePlanInput(plan: PlanFile, mode: 'propose' | 'execute'): CreatePlanInput {
  return {
    goal: plan.goal,
    mode,
    ...(plan.planId ? { planId: plan.planId } : {}),
    ...(plan.labels ? { labels: plan.labels } : {}),
    items: plan.items.map((it) => ({
      id: it.id,
      title: it.title ?? it.id,
      why: it.why ?? '',
      dependsOn: it.dependsOn ?? [],
      ...(it.tool !== undefined ? { tool: it.tool } : {}),
      input: it.input ?? {},
      ...(it.retry ? { retry: it.retry } : {}),
      ...(it.secret ? { secret: it.secret } : {}),
      ...(it.wait ? { wait: it.wait } : {}),
    })),
  };
}
