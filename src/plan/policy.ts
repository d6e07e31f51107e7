/**
 * Approval policy: which plans must be proposed and approved before anything runs. Pure data and pure
 * functions (no I/O, no clock): the executor loads and validates a policy file once at start
 * (`src/policy-file.ts`) and hands the compiled policy to `decide` in its context; `decide` evaluates it for
 * the items a command adds and records the {@link PolicyDecision} in the events it emits. Replay folds those
 * events and never evaluates a policy again, so a policy change applies to new decisions only.
 */
import { canonicalJson } from './canonical.js';
import { sha256Hex } from './digest.js';
import type { ItemSpec, PolicyDecision } from './generated/types.js';

export type { PolicyDecision };

/** `always` (production: every plan is reviewed), `never` (sandbox), or `rules` (the first rule that matches). */
export const ApprovalMode = { always: 'always', never: 'never', rules: 'rules' } as const;
export type ApprovalMode = (typeof ApprovalMode)[keyof typeof ApprovalMode];

/**
 * One rule. Every matcher it names must match (a rule with `tool` and `label` needs both); a rule names at
 * least one. `approvers` / `forbidSelfApproval` override the policy's for reviews this rule asks for.
 */
export interface PolicyRule {
  /** Recorded in events as the rule that decided; default `rules[i]`. */
  readonly name?: string;
  /** Glob over an item's tool (`*` any characters, `?` one): `payments.*`. */
  readonly tool?: string;
  /** `key=value` over the plan's labels; the value may be a glob (`env=prod*`). */
  readonly label?: string;
  /** The plan has more than this many items (after the change). */
  readonly itemsOver?: number;
  readonly approvers?: number;
  readonly forbidSelfApproval?: boolean;
}

/** A validated policy, as `loadPolicy` / `compilePolicy` return it: plain frozen data. */
export interface ApprovalPolicy {
  readonly id: string;
  /** sha256 hex of the canonical JSON of the policy's content (everything but the hash). */
  readonly hash: string;
  readonly approval: ApprovalMode;
  /** Distinct approvers a review needs (default 1). */
  readonly approvers: number;
  /** The plan's creator (the CreatePlan actor) may not approve it. */
  readonly forbidSelfApproval: boolean;
  readonly rules: readonly PolicyRule[];
}

/** What a policy is evaluated against: the plan's labels, the items under review, the plan's item count after them. */
export interface PolicySubject {
  readonly labels: Readonly<Record<string, string>>;
  readonly items: readonly ItemSpec[];
  readonly itemCount: number;
}

export type PolicyContent = Omit<ApprovalPolicy, 'hash'>;

/**
 * Freezes a policy's content and names its version: `hash` = sha256 hex of its canonical JSON. The content
 * must be valid already (see `loadPolicy` for the validated entry point).
 *
 * @example compilePolicy({ id: 'sandbox', approval: 'never', approvers: 1, forbidSelfApproval: false, rules: [] }).hash
 */
export function compilePolicy(content: PolicyContent): ApprovalPolicy {
  const rules = content.rules.map((r) => Object.freeze(stripUndefined({ ...r })) as PolicyRule);
  const normalized = { id: content.id, approval: content.approval, approvers: content.approvers, forbidSelfApproval: content.forbidSelfApproval, rules };
  return Object.freeze({ ...normalized, rules: Object.freeze(rules), hash: sha256Hex(canonicalJson(normalized)) });
}

function stripUndefined<T extends object>(o: T): T {
  for (const k of Object.keys(o) as (keyof T)[]) if (o[k] === undefined) delete o[k];
  return o;
}

/** The name a rule is recorded under. */
export function ruleName(policy: ApprovalPolicy, index: number): string {
  return policy.rules[index]?.name ?? `rules[${index}]`;
}

/**
 * `*` matches any characters (dots included), `?` one; everything else literally. Whole-string match.
 * The two-pointer wildcard walk (back to the last `*` on a mismatch) takes O(glob × value) at worst, never
 * the exponential backtracking a regular expression could take on a hostile tool name.
 */
export function globMatch(glob: string, value: string): boolean {
  let g = 0;
  let v = 0;
  let star = -1;
  let mark = 0;
  while (v < value.length) {
    if (g < glob.length && (glob[g] === '?' || (glob[g] !== '*' && glob[g] === value[v]))) {
      g++;
      v++;
    } else if (g < glob.length && glob[g] === '*') {
      star = g++;
      mark = v;
    } else if (star >= 0) {
      g = star + 1;
      v = ++mark;
    } else {
      return false;
    }
  }
  while (g < glob.length && glob[g] === '*') g++;
  return g === glob.length;
}

/** Why a rule matches the subject, or null when it does not. */
function ruleReason(rule: PolicyRule, subject: PolicySubject): string | null {
  const why: string[] = [];
  if (rule.tool !== undefined) {
    const glob = rule.tool;
    const hit = subject.items.find((i) => globMatch(glob, i.tool));
    if (hit === undefined) return null;
    why.push(`item ${hit.id} uses tool ${hit.tool} (${glob})`);
  }
  if (rule.label !== undefined) {
    const eq = rule.label.indexOf('=');
    const key = rule.label.slice(0, eq);
    const value = rule.label.slice(eq + 1);
    const actual = Object.prototype.hasOwnProperty.call(subject.labels, key) ? subject.labels[key] : undefined;
    if (actual === undefined || !globMatch(value, actual)) return null;
    why.push(`label ${key}=${actual} (${rule.label})`);
  }
  if (rule.itemsOver !== undefined) {
    if (!(subject.itemCount > rule.itemsOver)) return null;
    why.push(`${subject.itemCount} items > ${rule.itemsOver}`);
  }
  return why.length > 0 ? why.join(' and ') : null;
}

/**
 * What the policy decides for a subject: `always` requires a review, `never` does not, `rules` requires one
 * when a rule matches (the first, in file order). Always returns a decision naming the policy and its hash, so
 * the event can say which policy decided even when nothing was required.
 *
 * @example
 * evaluatePolicy(policy, { labels: {}, items: [{ ...spec, tool: 'payments.charge' }], itemCount: 1 })
 * // { required: true, rule: 'payments', reason: 'item pay uses tool payments.charge (payments.*)', approvers: 2, ... }
 */
export function evaluatePolicy(policy: ApprovalPolicy, subject: PolicySubject): PolicyDecision {
  const base = { policyId: policy.id, policyHash: policy.hash, approvers: policy.approvers, forbidSelfApproval: policy.forbidSelfApproval };
  switch (policy.approval) {
    case 'always':
      return { ...base, required: true, rule: 'always', reason: `policy ${policy.id} reviews every plan` };
    case 'never':
      return { ...base, required: false, rule: 'never', reason: `policy ${policy.id} reviews no plan` };
    case 'rules':
      for (let i = 0; i < policy.rules.length; i++) {
        const rule = policy.rules[i] as PolicyRule;
        const reason = ruleReason(rule, subject);
        if (reason === null) continue;
        return {
          ...base,
          required: true,
          rule: ruleName(policy, i),
          reason,
          approvers: rule.approvers ?? policy.approvers,
          forbidSelfApproval: rule.forbidSelfApproval ?? policy.forbidSelfApproval,
        };
      }
      return { ...base, required: false, rule: null, reason: `no rule of policy ${policy.id} matched` };
  }
}

/** One line for people: `production@1a2b3c4d5e6f rule payments: item pay uses tool payments.charge (payments.*); 2 approvers, not the creator`. */
export function describePolicyDecision(d: PolicyDecision): string {
  const approvers = `${d.approvers} approver${d.approvers === 1 ? '' : 's'}${d.forbidSelfApproval ? ', not the creator' : ''}`;
  const head = `${d.policyId}@${d.policyHash.slice(0, 12)}`;
  return d.required ? `${head} rule ${d.rule ?? '?'}: ${d.reason}; ${approvers}` : `${head} ${d.rule === null ? '' : `rule ${d.rule}: `}${d.reason}; no approval needed`;
}
