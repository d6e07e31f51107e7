// fast-check generators of createPlan inputs for the hostile tier, valid and invalid: sizes up to 5 MiB,
// deep JSON (to 10,000 levels), unicode (lone surrogates, RTL, NUL), dependency cycles, unknown tools,
// duplicate ids, huge item counts, wrong types. Shared by the library-client and HTTP API files.
import fc from 'fast-check';

export interface HostileCommand {
  /** The generator's category and what it chose, for the results file. */
  readonly name: string;
  readonly planId: string;
  /** A createPlan input; for wrong-type cases deliberately not a CreatePlanInput. */
  readonly input: Record<string, unknown>;
  /** True when the domain should accept it (the plan must then complete). */
  readonly valid: boolean;
  /** Nesting depth of items[0].input for the deep-JSON cases (JSON.stringify overflows the stack on them). */
  readonly depth?: number;
}

/** The JSON text of a command's input plus its planId, built without recursion for the deep cases. */
export function jsonBody(c: HostileCommand, input: Record<string, unknown>): string {
  if (c.depth === undefined) return JSON.stringify({ ...input, planId: c.planId });
  const items = input['items'] as Array<Record<string, unknown>>;
  const shallow = { ...input, planId: c.planId, items: [{ ...items[0], input: '__DEEP__' }] };
  return JSON.stringify(shallow).replace('"__DEEP__"', `${'{"d":'.repeat(c.depth)}"bottom"${'}'.repeat(c.depth)}`);
}

let n = 0;
const nextId = (label: string) => `hz-${label}-${Date.now().toString(36)}-${(n++).toString(36)}`;

const item = (i: number, extra: Record<string, unknown> = {}) => ({ id: `i-${i}`, title: `step ${i}`, why: `step ${i} is needed`, tool: 'counted', input: { i }, ...extra });
const chain = (count: number) => Array.from({ length: count }, (_, i) => item(i, i > 0 ? { dependsOn: [`i-${i - 1}`] } : {}));

function nested(depth: number): unknown {
  let v: unknown = 'bottom';
  for (let i = 0; i < depth; i++) v = { d: v };
  return v;
}

const UNICODE = ['\ud800', 'tail \udfff', 'mixed \ud83d\ude00 and \ud83d', '\u202eRTL override\u202c', 'مرحبا بالعالم', 'nul\u0000byte', '\u0000', '\ufeffbom', '\u200b'] as const;

const valid = fc.integer({ min: 1, max: 5 }).map((count): HostileCommand => ({ name: `valid: ${count} items`, planId: nextId('ok'), input: { goal: 'a normal plan', mode: 'execute', items: chain(count) }, valid: true }));

type Field = 'why' | 'input' | 'goal' | 'title';
function oversizedCmd(bytes: number, field: Field): HostileCommand {
  const big = 'z'.repeat(bytes);
  const it = item(0);
  const input = field === 'goal' ? { goal: big, mode: 'execute', items: [it] } : { goal: 'oversized', mode: 'execute', items: [{ ...it, [field]: field === 'input' ? { big } : big }] };
  return { name: `oversized: ${field} of ${bytes} bytes`, planId: nextId('big'), input, valid: false };
}
const oversized = fc.tuple(fc.constantFrom(300 * 1024, 1536 * 1024, 3 * 1024 * 1024, 5 * 1024 * 1024), fc.constantFrom<Field>('why', 'input', 'goal', 'title')).map(([b, f]) => oversizedCmd(b, f));

const deepCmd = (depth: number): HostileCommand => ({ name: `deep JSON: input nested ${depth} levels`, planId: nextId('deep'), input: { goal: 'deep input', mode: 'execute', items: [item(0, { input: nested(depth) })] }, valid: depth <= 100, depth });
const deep = fc.constantFrom(100, 2000, 10_000).map(deepCmd);

type Where = 'goal' | 'title' | 'why' | 'itemId' | 'planId' | 'label' | 'inputKey';
function unicodeCmd(text: string, where: Where): HostileCommand {
  const planId = where === 'planId' ? `hz-${text}` : nextId('uni');
  const it = where === 'itemId' ? item(0, { id: text }) : where === 'title' || where === 'why' ? item(0, { [where]: text }) : where === 'inputKey' ? item(0, { input: { [text]: text } }) : item(0);
  return {
    name: `unicode in ${where}: ${JSON.stringify(text)}`,
    planId,
    input: { goal: where === 'goal' ? text : 'unicode', mode: 'execute', items: [it], ...(where === 'label' ? { labels: { [text]: text } } : {}) },
    valid: false, // some are legal (RTL text in a title): the property holds either way
  };
}
const unicode = fc.tuple(fc.constantFrom(...UNICODE), fc.constantFrom<Where>('goal', 'title', 'why', 'itemId', 'planId', 'label', 'inputKey')).map(([t, w]) => unicodeCmd(t, w));

function cycleCmd(kind: 'self' | 'pair' | 'ring'): HostileCommand {
  const items = kind === 'self' ? [item(0, { dependsOn: ['i-0'] })] : kind === 'pair' ? [item(0, { dependsOn: ['i-1'] }), item(1, { dependsOn: ['i-0'] })] : [item(0, { dependsOn: ['i-2'] }), item(1, { dependsOn: ['i-0'] }), item(2, { dependsOn: ['i-1'] })];
  return { name: `dependency cycle: ${kind}`, planId: nextId('cyc'), input: { goal: 'cycle', mode: 'execute', items }, valid: false };
}
const cycles = fc.constantFrom('self', 'pair', 'ring').map(cycleCmd);

const unknownTools = fc.constantFrom('no-such-tool', '', '../../etc/passwd', 't'.repeat(300)).map((tool): HostileCommand => ({ name: `unknown tool ${JSON.stringify(tool.slice(0, 20))}`, planId: nextId('tool'), input: { goal: 'unknown tool', mode: 'execute', items: [item(0, { tool })] }, valid: false }));

function duplicateCmd(what: 'item' | 'plan'): HostileCommand {
  const planId = nextId('dup');
  return what === 'item'
    ? { name: 'duplicate item ids', planId, input: { goal: 'dup', mode: 'execute', items: [item(0), item(0)] }, valid: false }
    : { name: 'duplicate plan id (created twice)', planId, input: { goal: 'dup', mode: 'execute', items: [item(0)], __twice: true }, valid: false };
}
const duplicates = fc.constantFrom('item', 'plan').map(duplicateCmd);

const countCmd = (count: number): HostileCommand => ({ name: `huge item count: ${count}`, planId: nextId('many'), input: { goal: 'many items', mode: 'execute', items: Array.from({ length: count }, (_, i) => item(i)) }, valid: false });
const counts = fc.constantFrom(1001, 2500, 10_000).map(countCmd);

const WRONG_TYPES: ReadonlyArray<[string, () => Record<string, unknown>]> = [
  ['goal is a number', () => ({ goal: 42, mode: 'execute', items: [item(0)] })],
  ['mode is unknown', () => ({ goal: 'g', mode: 'later', items: [item(0)] })],
  ['items is a string', () => ({ goal: 'g', mode: 'execute', items: 'i-0' })],
  ['item id is a number', () => ({ goal: 'g', mode: 'execute', items: [item(0, { id: 7 })] })],
  ['dependsOn is a string', () => ({ goal: 'g', mode: 'execute', items: [item(0), item(1, { dependsOn: 'i-0' })] })],
  ['retry.maxAttempts is negative', () => ({ goal: 'g', mode: 'execute', items: [item(0, { retry: { maxAttempts: -1, initialBackoffMs: 0, backoffMultiplier: 1, maxBackoffMs: 0 } })] })],
  ['input is undefined', () => ({ goal: 'g', mode: 'execute', items: [item(0, { input: undefined })] })],
  ['labels is an array', () => ({ goal: 'g', mode: 'execute', items: [item(0)], labels: ['a'] })],
  ['item is null', () => ({ goal: 'g', mode: 'execute', items: [null] })],
  ['secret is a string', () => ({ goal: 'g', mode: 'execute', items: [item(0, { secret: 'card.number' })] })],
  ['secret holds a number', () => ({ goal: 'g', mode: 'execute', items: [item(0, { secret: [7] })] })],
  ['secret path with an empty segment', () => ({ goal: 'g', mode: 'execute', items: [item(0, { secret: ['card..number'] })] })],
  ['secret lists 65 paths', () => ({ goal: 'g', mode: 'execute', items: [item(0, { secret: Array.from({ length: 65 }, (_, i) => `f${i}`) })] })],
];
const wrongTypeCmd = (i: number): HostileCommand => ({ name: `wrong type: ${WRONG_TYPES[i]![0]}`, planId: nextId('type'), input: WRONG_TYPES[i]![1](), valid: false });
const wrongTypes = fc.integer({ min: 0, max: WRONG_TYPES.length - 1 }).map(wrongTypeCmd);

const badPlanIdCmd = (planId: string): HostileCommand => ({ name: `bad plan id ${JSON.stringify(planId.slice(0, 20))}`, planId, input: { goal: 'g', mode: 'execute', items: [item(0)] }, valid: false });
const badPlanIds = fc.constantFrom('', 'has space', '__reserved', 'p'.repeat(129), 'slash/inside').map(badPlanIdCmd);

/** Every category, so each run covers all of them; `perCategory` samples each (fixed seed: reproducible). */
export const CATEGORIES = { valid, oversized, deep, unicode, cycles, unknownTools, duplicates, counts, wrongTypes, badPlanIds } as const;

/** The extremes named in issue 9, always in the run (sampling may miss them). */
export function edgeCommands(): HostileCommand[] {
  return [
    deepCmd(10_000),
    oversizedCmd(5 * 1024 * 1024, 'input'),
    oversizedCmd(300 * 1024, 'why'),
    unicodeCmd('\ud800', 'goal'),
    unicodeCmd('nul\u0000byte', 'why'),
    unicodeCmd('\u202eRTL override\u202c', 'title'),
    unicodeCmd('tail \udfff', 'label'),
    cycleCmd('self'),
    duplicateCmd('plan'),
    countCmd(1001),
    wrongTypeCmd(0),
    wrongTypeCmd(4),
    wrongTypeCmd(5),
    badPlanIdCmd(''),
  ];
}

export function sampleCommands(perCategory: number, seed: number): HostileCommand[] {
  const out: HostileCommand[] = [];
  let s = seed;
  for (const arb of Object.values(CATEGORIES)) out.push(...fc.sample(arb as fc.Arbitrary<HostileCommand>, { numRuns: perCategory, seed: s++ }));
  return [...out, ...edgeCommands()];
}
