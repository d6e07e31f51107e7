import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import avsc from 'avsc';
import { describe, expect, it } from 'vitest';
import { generate, generatedFiles, staleFiles } from '../../scripts/gen-types.js';
import { commandTypes, eventTypes, planCommandSchema, planEventSchema, RejectionCode, eventSchemaVersion } from '../../src/plan/index.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

describe('schemas and generated types are one truth', () => {
  it('the committed generated files equal what the schemas produce (gen-types --check)', () => {
    expect(staleFiles(root)).toEqual([]);
    const files = generate(`${root}/schemas`);
    expect(Object.keys(files).sort()).toEqual([generatedFiles.schemas, generatedFiles.types].sort());
    expect(readFileSync(`${root}/${generatedFiles.types}`, 'utf8')).toBe(files[generatedFiles.types]);
  });

  it('the inlined envelopes parse with avsc and carry every payload in union order', () => {
    const ev = avsc.Type.forSchema(planEventSchema as unknown as avsc.Schema, { wrapUnions: true });
    const cm = avsc.Type.forSchema(planCommandSchema as unknown as avsc.Schema, { wrapUnions: true });
    expect(ev.name).toBe('planledger.PlanEvent');
    expect(cm.name).toBe('planledger.PlanCommand');
    expect(eventTypes).toEqual([
      'PlanCreated', 'ItemAdded', 'PlanProposed', 'PlanApproved', 'PlanRejected', 'ItemDelegated', 'IntentRecorded', 'ResultCommitted',
      'ItemCompleted', 'ItemRetryScheduled', 'ItemFailed', 'PlanCompleted', 'PlanFailed', 'PlanCancelled', 'CommandRejected',
      'ApprovalRecorded',
      'ItemCheckpointed',
      'EvidenceRecorded',
      'WaitStarted',
      'ItemSignalled',
      'ItemInherited',
    ]);
    expect(commandTypes).toEqual(['CreatePlan', 'AddItems', 'ProposePlan', 'ApprovePlan', 'RejectPlan', 'CancelPlan', 'RetryItem', 'ChildPlanFinished', 'ErasePlan', 'SignalItem']);
    const payload = planEventSchema.fields.find((f) => f.name === 'payload')!;
    expect((payload.type as readonly { name: string }[]).map((b) => b.name)).toEqual([...eventTypes]);
    expect(eventSchemaVersion).toBe(1);
  });

  it('enum symbols equal the TypeScript values', () => {
    const schema = JSON.parse(readFileSync(`${root}/schemas/types/RejectionCode.avsc`, 'utf8')) as { symbols: string[] };
    expect(Object.values(RejectionCode)).toEqual(schema.symbols);
  });

  it('an older reader resolves a newer writer that appended a field with a default (BACKWARD)', () => {
    const v1 = avsc.Type.forSchema(planEventSchema as unknown as avsc.Schema, { wrapUnions: true });
    const v2schema = JSON.parse(JSON.stringify(planEventSchema)) as { fields: { name: string; type: unknown; default?: unknown }[] };
    v2schema.fields.splice(v2schema.fields.length - 1, 0, { name: 'tenant', type: ['null', 'string'], default: null });
    const v2 = avsc.Type.forSchema(v2schema as unknown as avsc.Schema, { wrapUnions: true });
    // New reader, old data: the default fills the field.
    const resolver = v2.createResolver(v1);
    const old = {
      eventId: 'p:1', planId: 'p', seq: 1, occurredAt: 1, actor: 'a', causationId: 'c', correlationId: 'c', prevHash: '0', hash: 'h', schemaVersion: 1,
      payload: { 'planledger.PlanCompleted': { itemCount: 2 } },
    };
    const read = v2.fromBuffer(v1.toBuffer(old), resolver) as Record<string, unknown>;
    expect(read['tenant']).toBeNull();
    expect(read['payload']).toEqual({ 'planledger.PlanCompleted': { itemCount: 2 } });
  });
});
