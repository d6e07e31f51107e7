/**
 * The approval policy file (YAML or JSON), read and validated once when an executor starts. A bad value
 * fails with its field path (`rules[1].label`) and the reason; the compiled policy is frozen data that the
 * executor hands to `decide` (see `src/plan/policy.ts`).
 *
 * @example
 * # policy.yaml — production: every plan is proposed, two people other than its creator approve it
 * id: production
 * approval: always
 * approvers: 2
 * forbidSelfApproval: true
 */
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { LedgerError } from './errors.js';
import { compilePolicy, type ApprovalPolicy } from './plan/index.js';
import { setting } from './settings.js';

const approvers = z.number().int().min(1).max(100);

const ruleSchema = z
  .object({
    name: z.string().regex(/^[A-Za-z0-9._:-]{1,128}$/, '1..128 chars of [A-Za-z0-9._:-]').optional(),
    tool: z.string().min(1).max(256).optional(),
    label: z.string().regex(/^[^=\s]{1,256}=.{0,256}$/s, 'key=value').optional(),
    itemsOver: z.number().int().min(0).optional(),
    approvers: approvers.optional(),
    forbidSelfApproval: z.boolean().optional(),
  })
  .strict()
  .refine((r) => r.tool !== undefined || r.label !== undefined || r.itemsOver !== undefined, { message: 'a rule needs tool, label or itemsOver' });

const policySchema = z
  .object({
    id: z.string().regex(/^[A-Za-z0-9._:-]{1,128}$/, '1..128 chars of [A-Za-z0-9._:-]'),
    approval: z.enum(['always', 'never', 'rules']),
    approvers: approvers.default(1),
    forbidSelfApproval: z.boolean().default(false),
    rules: z.array(ruleSchema).max(1000).default([]),
  })
  .strict()
  .superRefine((p, ctx) => {
    if (p.approval === 'rules' && p.rules.length === 0) ctx.addIssue({ code: 'custom', path: ['rules'], message: 'approval "rules" needs at least one rule' });
    if (p.approval !== 'rules' && p.rules.length > 0) ctx.addIssue({ code: 'custom', path: ['rules'], message: `approval "${p.approval}" takes no rules (use approval: rules)` });
  });

/** The policy file's shape, before compilation. */
export type PolicyFile = z.input<typeof policySchema>;

function invalid(source: string, field: string, message: string, cause?: unknown): never {
  throw new LedgerError('VALIDATION', `invalid policy ${source}: ${field} ${message}`, { field }, cause === undefined ? undefined : { cause });
}

/** Validates a parsed policy (an object from YAML/JSON, or built in code) and compiles it. */
export function parsePolicy(value: unknown, source = 'policy'): ApprovalPolicy {
  const parsed = policySchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const field = issue.path.reduce<string>((acc, k) => (typeof k === 'number' ? `${acc}[${k}]` : acc === '' ? String(k) : `${acc}.${String(k)}`), '') || '(root)';
    invalid(source, field, issue.message);
  }
  const p = parsed.data;
  return compilePolicy({ id: p.id, approval: p.approval, approvers: p.approvers, forbidSelfApproval: p.forbidSelfApproval, rules: p.rules });
}

/**
 * Reads, validates and compiles a policy file (`.yaml`, `.yml` or `.json`; YAML is a superset of JSON).
 * Throws `VALIDATION` naming the file and the field.
 */
export function loadPolicy(path: string): ApprovalPolicy {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    return invalid(path, '(file)', `cannot be read: ${(e as Error).message}`, e);
  }
  let value: unknown;
  try {
    value = parseYaml(text, { maxAliasCount: 100 });
  } catch (e) {
    return invalid(path, '(file)', `is not YAML or JSON: ${(e as Error).message}`, e);
  }
  return parsePolicy(value, path);
}

/**
 * The policy an executor runs with: an explicit option (a compiled policy or a file path), else the file
 * named by `PLAN_LEDGER_POLICY`, else none (every decision as without policies).
 */
export function resolvePolicy(option: ApprovalPolicy | string | undefined, env: NodeJS.ProcessEnv = process.env): ApprovalPolicy | undefined {
  if (typeof option === 'object') {
    const { hash: _hash, ...content } = option; // validated again, and hashed from its content
    return parsePolicy(content, 'policy option');
  }
  const path = option ?? setting('PLAN_LEDGER_POLICY', env);
  return path === undefined ? undefined : loadPolicy(path);
}
