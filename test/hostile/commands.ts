// fast-check generators of createPlan inputs for the hostile tier, valid and invalid: sizes up to 5 MiB,
// deep JSON (to 10,000 levels), unicode (lone surrogates, RTL, NUL), dependency cycles, unknown tools,
// duplicate ids, huge item counts, wrong types. Shared by the library-client and HTTP API files.
import fc from 'fast-check';
import type { Expected } from './support.js';

export interface HostileCommand {
  /** The generator's category and what it chose, for the results file. */
  readonly name: string;
  readonly planId: string;
  /** A createPlan input; for wrong-type cases deliberately not a CreatePlanInput. */
  readonly input: Record<string, unknown>;
  /** True when the domain should accept it (the plan must then complete): `client` is then `[completed]`. */
  readonly valid: boolean;
  /** The endings accepted through the library client (`createPlan`), with their codes. */
  readonly client: readonly Expected[];
  /** The endings accepted through the HTTP API (`POST /api/plans`, schema projector/http/schemas.ts). */
  readonly http: readonly Expected[];
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

// The endings, by where a command is stopped (docs/reference/limits.md, src/client/ledger.ts, src/plan/decide.ts,
// projector/http/schemas.ts and projector/http/errors.ts).
const completed: Expected = { kind: 'completed' };
const rejected = (...codes: string[]): Expected => ({ kind: 'rejected', codes });
const error = (...codes: string[]): Expected => ({ kind: 'error', codes });
const failed = (...codes: string[]): Expected => ({ kind: 'failed', codes });
/** The API's JSON schema refuses the body before the ledger sees it. */
const badRequest: Expected = { kind: 'http', status: 400, errors: ['bad_request'] };
/** The ledger client behind the API refused the body (a LedgerError VALIDATION). */
const validation: Expected = { kind: 'http', status: 400, errors: ['validation'] };
/** The API's body limit (1 MiB by default). */
const tooLarge: Expected = { kind: 'http', status: 413, errors: ['payload_too_large'] };
const MiB = 1024 * 1024;
/** The commands topic's record limit (max.message.bytes, 1 MiB by default): the client refuses a larger command. */
const COMMAND_LIMIT = MiB;

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

const valid = fc.integer({ min: 1, max: 5 }).map((count): HostileCommand => ({ name: `valid: ${count} items`, planId: nextId('ok'), input: { goal: 'a normal plan', mode: 'execute', items: chain(count) }, valid: true, client: [completed], http: [completed] }));

type Field = 'why' | 'input' | 'goal' | 'title';
function oversizedCmd(bytes: number, field: Field): HostileCommand {
  const big = 'z'.repeat(bytes);
  const it = item(0);
  const input = field === 'goal' ? { goal: big, mode: 'execute', items: [it] } : { goal: 'oversized', mode: 'execute', items: [{ ...it, [field]: field === 'input' ? { big } : big }] };
  // An input of any of these sizes is legal: it goes by reference (blobs, up to 64 MiB). A text field is
  // inline: up to the command record limit it is accepted; past it the client refuses PAYLOAD_TOO_LARGE.
  // The API caps goal and why at 10,000 characters and title at 1,000, and bodies at 1 MiB.
  const client = field === 'input' || bytes < COMMAND_LIMIT ? [completed] : [error('PAYLOAD_TOO_LARGE')];
  const http = bytes >= MiB ? [tooLarge] : field === 'input' ? [completed] : [badRequest];
  return { name: `oversized: ${field} of ${bytes} bytes`, planId: nextId('big'), input, valid: client[0] === completed, client, http };
}
const oversized = fc.tuple(fc.constantFrom(300 * 1024, 1536 * 1024, 3 * 1024 * 1024, 5 * 1024 * 1024), fc.constantFrom<Field>('why', 'input', 'goal', 'title')).map(([b, f]) => oversizedCmd(b, f));

// No nesting limit is designed: 2,000 levels are stored and run; at 10,000 the client's canonical JSON
// writer runs out of stack, which it reports as VALIDATION on the item's input (the API as a 400).
const deepCmd = (depth: number): HostileCommand => {
  const legal = depth <= 2000;
  return {
    name: `deep JSON: input nested ${depth} levels`,
    planId: nextId('deep'),
    input: { goal: 'deep input', mode: 'execute', items: [item(0, { input: nested(depth) })] },
    valid: legal,
    depth,
    client: legal ? [completed] : [error('VALIDATION')],
    http: legal ? [completed] : [validation],
  };
};
const deep = fc.constantFrom(100, 2000, 10_000).map(deepCmd);

type Where = 'goal' | 'title' | 'why' | 'itemId' | 'planId' | 'label' | 'inputKey';
function unicodeCmd(text: string, where: Where): HostileCommand {
  const planId = where === 'planId' ? `hz-${text}` : nextId('uni');
  const it = where === 'itemId' ? item(0, { id: text }) : where === 'title' || where === 'why' ? item(0, { [where]: text }) : where === 'inputKey' ? item(0, { input: { [text]: text } }) : item(0);
  // Ids are [A-Za-z0-9._:-]{1,128} (the executor rejects another item id, INVALID_FIELD); text with a lone
  // surrogate has no UTF-8 form, and the client refuses it (VALIDATION naming the field) before sending;
  // any other text is legal, and so is any key of the input (canonical JSON escapes it).
  const lone = !(text as string & { isWellFormed(): boolean }).isWellFormed();
  const legal = where === 'inputKey' || ((where === 'goal' || where === 'title' || where === 'why' || where === 'label') && !lone);
  const client = legal ? [completed] : where === 'planId' || lone ? [error('VALIDATION')] : [rejected('INVALID_FIELD')];
  const http = legal ? [completed] : where === 'planId' || where === 'itemId' ? [badRequest] : [validation];
  return {
    name: `unicode in ${where}: ${JSON.stringify(text)}`,
    planId,
    input: { goal: where === 'goal' ? text : 'unicode', mode: 'execute', items: [it], ...(where === 'label' ? { labels: { [text]: text } } : {}) },
    valid: legal,
    client,
    http,
  };
}
const unicode = fc.tuple(fc.constantFrom(...UNICODE), fc.constantFrom<Where>('goal', 'title', 'why', 'itemId', 'planId', 'label', 'inputKey')).map(([t, w]) => unicodeCmd(t, w));

function cycleCmd(kind: 'self' | 'pair' | 'ring'): HostileCommand {
  const items = kind === 'self' ? [item(0, { dependsOn: ['i-0'] })] : kind === 'pair' ? [item(0, { dependsOn: ['i-1'] }), item(1, { dependsOn: ['i-0'] })] : [item(0, { dependsOn: ['i-2'] }), item(1, { dependsOn: ['i-0'] }), item(2, { dependsOn: ['i-1'] })];
  return { name: `dependency cycle: ${kind}`, planId: nextId('cyc'), input: { goal: 'cycle', mode: 'execute', items }, valid: false, client: [rejected('DEPENDENCY_CYCLE')], http: [rejected('DEPENDENCY_CYCLE')] };
}
const cycles = fc.constantFrom('self', 'pair', 'ring').map(cycleCmd);

// A tool name is not checked when the plan is created: an unknown one fails its item (UNKNOWN_TOOL) when it
// runs. An empty name is refused (INVALID_FIELD); the API takes names of 1..256 characters.
function unknownToolCmd(tool: string): HostileCommand {
  const client = tool === '' ? [rejected('INVALID_FIELD')] : [failed('UNKNOWN_TOOL')];
  const http = tool === '' || tool.length > 256 ? [badRequest] : [failed('UNKNOWN_TOOL')];
  return { name: `unknown tool ${JSON.stringify(tool.slice(0, 20))}`, planId: nextId('tool'), input: { goal: 'unknown tool', mode: 'execute', items: [item(0, { tool })] }, valid: false, client, http };
}
const unknownTools = fc.constantFrom('no-such-tool', '', '../../etc/passwd', 't'.repeat(300)).map(unknownToolCmd);

function duplicateCmd(what: 'item' | 'plan'): HostileCommand {
  const planId = nextId('dup');
  return what === 'item'
    ? { name: 'duplicate item ids', planId, input: { goal: 'dup', mode: 'execute', items: [item(0), item(0)] }, valid: false, client: [rejected('DUPLICATE_ITEM')], http: [rejected('DUPLICATE_ITEM')] }
    : { name: 'duplicate plan id (created twice)', planId, input: { goal: 'dup', mode: 'execute', items: [item(0)], __twice: true }, valid: false, client: [rejected('PLAN_EXISTS')], http: [rejected('PLAN_EXISTS')] };
}
const duplicates = fc.constantFrom('item', 'plan').map(duplicateCmd);

// A plan holds up to 100,000 items (the executor's --max-items); the API takes up to 1,000 per request.
const countCmd = (count: number): HostileCommand => ({
  name: `huge item count: ${count}`,
  planId: nextId('many'),
  input: { goal: 'many items', mode: 'execute', items: Array.from({ length: count }, (_, i) => item(i)) },
  valid: true,
  client: [completed],
  http: count > 1000 ? [badRequest] : [completed],
});
const counts = fc.constantFrom(1001, 2500, 10_000).map(countCmd);

// [name, input, client endings]: the client refuses a shape it cannot send (VALIDATION) or encode against
// the contract (SCHEMA); the executor rejects a value the contract allows but the domain does not
// (INVALID_FIELD). The API's schema refuses every one of them (400) but the missing input, which is {}.
const WRONG_TYPES: ReadonlyArray<[string, () => Record<string, unknown>, readonly Expected[]]> = [
  ['goal is a number', () => ({ goal: 42, mode: 'execute', items: [item(0)] }), [error('SCHEMA')]],
  ['mode is unknown', () => ({ goal: 'g', mode: 'later', items: [item(0)] }), [error('SCHEMA')]],
  ['items is a string', () => ({ goal: 'g', mode: 'execute', items: 'i-0' }), [error('VALIDATION')]],
  ['item id is a number', () => ({ goal: 'g', mode: 'execute', items: [item(0, { id: 7 })] }), [error('SCHEMA')]],
  ['dependsOn is a string', () => ({ goal: 'g', mode: 'execute', items: [item(0), item(1, { dependsOn: 'i-0' })] }), [error('SCHEMA')]],
  ['retry.maxAttempts is negative', () => ({ goal: 'g', mode: 'execute', items: [item(0, { retry: { maxAttempts: -1, initialBackoffMs: 0, backoffMultiplier: 1, maxBackoffMs: 0 } })] }), [rejected('INVALID_FIELD')]],
  ['input is undefined', () => ({ goal: 'g', mode: 'execute', items: [item(0, { input: undefined })] }), [completed]],
  ['labels is an array', () => ({ goal: 'g', mode: 'execute', items: [item(0)], labels: ['a'] }), [error('SCHEMA')]],
  ['item is null', () => ({ goal: 'g', mode: 'execute', items: [null] }), [error('VALIDATION')]],
  ['secret is a string', () => ({ goal: 'g', mode: 'execute', items: [item(0, { secret: 'card.number' })] }), [error('SCHEMA')]],
  ['secret holds a number', () => ({ goal: 'g', mode: 'execute', items: [item(0, { secret: [7] })] }), [error('SCHEMA')]],
  ['secret path with an empty segment', () => ({ goal: 'g', mode: 'execute', items: [item(0, { secret: ['card..number'] })] }), [rejected('INVALID_FIELD')]],
  ['secret lists 65 paths', () => ({ goal: 'g', mode: 'execute', items: [item(0, { secret: Array.from({ length: 65 }, (_, i) => `f${i}`) })] }), [rejected('INVALID_FIELD')]],
];
const wrongTypeCmd = (i: number): HostileCommand => {
  const [name, input, client] = WRONG_TYPES[i]!;
  const legal = client.includes(completed);
  return { name: `wrong type: ${name}`, planId: nextId('type'), input: input(), valid: legal, client, http: legal ? [completed] : [badRequest] };
};
const wrongTypes = fc.integer({ min: 0, max: WRONG_TYPES.length - 1 }).map(wrongTypeCmd);

// Ids are [A-Za-z0-9._:-]{1,128} (VALIDATION in the client, 400 from the API); `__` starts the reserved ids,
// which only the executor refuses (INVALID_FIELD).
const badPlanIdCmd = (planId: string): HostileCommand => {
  const reserved = planId.startsWith('__');
  return { name: `bad plan id ${JSON.stringify(planId.slice(0, 20))}`, planId, input: { goal: 'g', mode: 'execute', items: [item(0)] }, valid: false, client: reserved ? [rejected('INVALID_FIELD')] : [error('VALIDATION')], http: reserved ? [rejected('INVALID_FIELD')] : [badRequest] };
};
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
