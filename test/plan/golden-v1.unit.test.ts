/**
 * Golden vectors: a log written before approval policies existed still decodes, verifies and replays to the
 * same hashes and digests, and a plan decided today without a policy hashes exactly as it did then. The
 * expected values are literals computed by the code before the change, never recomputed here.
 */
import { readFileSync } from 'node:fs';
import avsc from 'avsc';
import { describe, expect, it } from 'vitest';
import {
  compilePolicy,
  decide,
  evolve,
  evolveAll,
  fromAvroEvent,
  planEventSchema,
  stateDigest,
  verifyChain,
  type AnyCommand,
  type DecideContext,
  type PlanEvent,
  type PlanState,
} from '../../src/plan/index.js';

const fixture = JSON.parse(readFileSync(new URL('../fixtures/v1-plan-log.json', import.meta.url), 'utf8')) as {
  schema: object;
  plans: { planId: string; avro: string[] }[];
};

const PINNED = {
  'golden-exec': {
    digest: '229f922dc7b593c2f021934bbba798f66faf12da7ae2fca503a1d5c3005eef17',
    stateDigest: 'ffc1ea98a0264f4f7509c773fba2c797a5d68e7138dd9139f4d564da0a535784',
    hashes: [
      'PlanCreated 41e5ad34b815957ee511a6a7e8d61ca801c58e813e94fc7f7f136484143feb2c',
      'ItemAdded b355a9e069331065e3e1e2e69b8abba32304668085811361ab738063b858ca75',
      'ItemAdded 2fccfe359ae73592253ad463260869adc7fd071519ef45d1c2ad956e36234473',
    ],
  },
  'golden-propose': {
    digest: '6a535d9a2183d74141c2d2de768a232086f01c252e68755630ae2a50d79d318a',
    stateDigest: '4cf69dfae7b604ad121f2cd502ef28f2e25048e4a34fb088ff40c4564fac99d1',
    hashes: [
      'PlanCreated 9db52574b3e6f84b585f8d45a813f0d3fe94ac14e796062676dbbbcccc468af2',
      'ItemAdded d8a488e1efaf0566dcddbd5ba9172fd6b9f690e15e3ddd50ba197131adeb045a',
      'PlanProposed b950ac868053a2aefd2ee66216e868da855187e249d7637ee26e74004a88ba7d',
      'PlanApproved 189b7146fd5f163e20f33e2b5132918e6af8553d60961fabf4d1455ac83f5292',
    ],
  },
} as const;

const v1 = avsc.Type.forSchema(fixture.schema as avsc.Schema, { wrapUnions: true });
const current = avsc.Type.forSchema(planEventSchema as unknown as avsc.Schema, { wrapUnions: true });
const resolver = current.createResolver(v1);

function decodeV1(planId: string): PlanEvent[] {
  const plan = fixture.plans.find((p) => p.planId === planId)!;
  return plan.avro.map((b64) => fromAvroEvent(current.fromBuffer(Buffer.from(b64, 'base64'), resolver)));
}

/** The commands that wrote the fixture, decided again by today's code. */
const meta = (commandId: string, planId: string, actor: string) => ({ commandId, planId, issuedAt: 0, actor, correlationId: 'corr-golden' });
const spec = (id: string, tool: string, dependsOn: string[] = []) => ({ id, title: `do ${id}`, why: `because ${id}`, dependsOn, tool, inputJson: '{"n":1}', retry: null });
function decideAll(cmds: (AnyCommand | ((s: PlanState) => AnyCommand))[], ctx: Omit<DecideContext, 'now'> = {}): { events: PlanEvent[]; state: PlanState } {
  let s: PlanState | undefined;
  const events: PlanEvent[] = [];
  let now = 1_700_000_000_000;
  for (const c of cmds) {
    const d = decide(s, typeof c === 'function' ? c(s!) : c, { ...ctx, now });
    if (!d.ok) throw new Error(d.rejection.message);
    for (const e of d.events) {
      s = evolve(s, e);
      events.push(e);
    }
    now += 1000;
  }
  return { events, state: s! };
}
const execPlan = (ctx?: Omit<DecideContext, 'now'>) =>
  decideAll(
    [{ ...meta('c1', 'golden-exec', 'alice'), type: 'CreatePlan', data: { goal: 'pay the invoice', mode: 'execute', labels: { env: 'prod' }, parent: null, items: [spec('fetch', 'http.get'), spec('pay', 'payments.charge', ['fetch'])] } } as AnyCommand],
    ctx,
  );
const proposePlan = () =>
  decideAll([
    { ...meta('d1', 'golden-propose', 'alice'), type: 'CreatePlan', data: { goal: 'review me', mode: 'propose', labels: {}, parent: null, items: [spec('x', 'echo')] } } as AnyCommand,
    { ...meta('d2', 'golden-propose', 'alice'), type: 'ProposePlan', data: { comment: null } } as AnyCommand,
    (s) => ({ ...meta('d3', 'golden-propose', 'bob'), type: 'ApprovePlan', data: { digest: s.digest, by: 'bob', comment: 'ok' } }) as AnyCommand,
  ]);

describe('golden vectors: a log written before approval policies', () => {
  for (const planId of ['golden-exec', 'golden-propose'] as const) {
    it(`${planId}: decodes with the new schema (policy defaults to null), verifies and replays to the pinned hashes and digests`, () => {
      const events = decodeV1(planId);
      expect(events.map((e) => `${e.type} ${e.hash}`)).toEqual(PINNED[planId].hashes);
      for (const e of events) if (e.type === 'PlanCreated' || e.type === 'PlanProposed') expect(e.data.policy).toBeNull();
      const chain = verifyChain(events);
      expect(chain).toEqual({ ok: true, head: PINNED[planId].hashes.at(-1)!.split(' ')[1], seq: events.length });
      const state = evolveAll(undefined, events)!;
      expect(state.digest).toBe(PINNED[planId].digest);
      expect(stateDigest(state)).toBe(PINNED[planId].stateDigest);
      expect('policy' in state).toBe(false);
      expect('createdBy' in state).toBe(false);
    });
  }

  it('today, the same commands decided without a policy give the same events byte for byte (hashes, digests, state digest)', () => {
    for (const [planId, { events, state }] of [['golden-exec', execPlan()], ['golden-propose', proposePlan()]] as const) {
      expect(events.map((e) => `${e.type} ${e.hash}`)).toEqual(PINNED[planId].hashes);
      expect(state.digest).toBe(PINNED[planId].digest);
      expect(stateDigest(state)).toBe(PINNED[planId].stateDigest);
      // And they equal the decoded v1 events, once the new field's default is filled in.
      expect(events).toEqual(decodeV1(planId));
    }
  });

  it('a policy decision is part of the hash: the same CreatePlan under a sandbox policy hashes differently and verifies', () => {
    const sandbox = compilePolicy({ id: 'sandbox', approval: 'never', approvers: 1, forbidSelfApproval: false, rules: [] });
    const { events, state } = execPlan({ policy: sandbox });
    expect(events[0]!.hash).not.toBe(PINNED['golden-exec'].hashes[0].split(' ')[1]);
    expect(verifyChain(events).ok).toBe(true);
    // Items and mode are unchanged, so the plan digest (what an operator approves) is the same.
    expect(state.digest).toBe(PINNED['golden-exec'].digest);
    expect(state.status).toBe('running');
  });
});
