// Secret fields and crypto-shredding against the real broker and registry: a plan whose input carries a
// unique marker runs with a master key (the tool sees the real value, the API shows "[secret]"), then is
// erased; afterwards every record of every topic under the prefix, read raw and decoded, holds the marker
// nowhere in plaintext, and with the master key nothing of the plan can be decrypted any more.
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { onTestFailed, onTestFinished, describe, expect, it } from 'vitest';
import { startProjector } from '../../projector/index.js';
import { codecFromConfig, type LedgerCodec } from '../../src/codec/index.js';
import { topicNames } from '../../src/config.js';
import { openPayload, parseEnvelope, PlanKeyring, unwrapDataKey } from '../../src/crypto/index.js';
import { startExecutor } from '../../executor/index.js';
import { connectLedger } from '../../src/client/index.js';
import { partitionFor, PLAN_KEYS_SEGMENT_MS } from '../../src/kafka/index.js';
import { createLogger } from '../../src/logging.js';
import { canonicalJson } from '../../src/plan/index.js';
import { defineTool } from '../../src/tools.js';
import { readAll, testAdmin, testConfig, testKafka, waitFor, type TestAdmin } from '../support/helpers.js';

const TOKEN = 'shred-test-token-0123456789';

function capture() {
  const lines: string[] = [];
  return { lines, stream: new Writable({ write: (c: Buffer, _e, cb) => void (lines.push(c.toString('utf8')), cb()) }) };
}

interface Seen {
  topic: string;
  partition: number;
  offset: string;
  key: string;
  /** The record as text: raw bytes, and its decoded form where it is Avro. */
  texts: string[];
}

/** Every record of every topic under the prefix, committed or not yet compacted: raw, and decoded where it is Avro. */
async function readEverything(kafka: ReturnType<typeof testKafka>, admin: TestAdmin, prefix: string, codec: LedgerCodec): Promise<Seen[]> {
  const t = topicNames(prefix);
  const topics = (await admin.listTopics()).filter((n) => n.startsWith(`${prefix}.`)).sort();
  const out: Seen[] = [];
  for (const topic of topics) {
    for (const r of await readAll(kafka, topic)) {
      const texts: string[] = [];
      if (r.value !== null) {
        texts.push(r.value.toString('utf8'), r.value.toString('latin1'));
        try {
          if (topic === t.events) texts.push(canonicalJson(await codec.decodeEvent(r.value)));
          else if (topic === t.commands) texts.push(canonicalJson(await codec.decodeCommand(r.value)));
          else if (topic === t.snapshots || topic === t.archive) texts.push(canonicalJson(await codec.decodeSnapshot(r.value)));
        } catch {
          // not Avro (a snapshot chunk, a watermark): the raw text is searched
        }
      }
      out.push({ topic, partition: r.partition, offset: r.offset, key: r.key?.toString('utf8') ?? '', texts });
    }
  }
  return out;
}

/** Every payload envelope in a text (JSON strings in decoded records, or raw chunks). */
function envelopesIn(text: string): string[] {
  const found: string[] = [];
  const re = /\{\\?"\$enc\\?":\{\\?"ct\\?":\\?"[A-Za-z0-9+/=]*\\?",\\?"iv\\?":\\?"[A-Za-z0-9+/=]*\\?",\\?"tag\\?":\\?"[A-Za-z0-9+/=]*\\?",\\?"v\\?":1\}\}/g;
  for (const m of text.matchAll(re)) found.push(m[0].replace(/\\"/g, '"'));
  return found;
}

describe('secret fields and crypto-shredding erase (real stack)', () => {
  it('redacts secret fields when shown, stores only ciphertext, and after erase nothing of the input can be read or decrypted', async () => {
    const master = randomBytes(32);
    const marker = `MARKER-${randomBytes(8).toString('hex')}`;
    const config = testConfig();
    const logs = capture();
    const logger = createLogger({ level: 'info', name: 'shred' }, logs.stream);
    onTestFailed(() => void process.stderr.write(`executor and projector log (last 40 lines):\n${logs.lines.slice(-40).join('')}`));
    const seenByTool: string[] = [];
    const charge = defineTool({
      name: 'pay.charge',
      async run(input: { card: { number: string; cvc: string }; token: string }, ctx) {
        seenByTool.push(input.card.number, input.token);
        await ctx.checkpoint({ card: { number: input.card.number }, step: 1 });
        await ctx.evidence('card', { card: { number: input.card.number } });
        // A large output goes by reference: its chunks hold the ciphertext.
        return { receipt: 'r-1', card: { number: input.card.number }, token: input.token, padding: 'x'.repeat(80 * 1024) };
      },
    });
    const after = defineTool({
      name: 'pay.after',
      async run(_input: unknown, ctx) {
        const dep = ctx.dependencies['charge'] as { card: { number: string } };
        return { sameCard: dep.card.number === marker };
      },
    });
    const executor = await startExecutor({ tools: [charge, after], config, logger, masterKey: master, concurrency: 4, sessionTimeoutMs: 6000, heartbeatIntervalMs: 500 });
    onTestFinished(() => executor.stop());
    const ledger = await connectLedger(config, { masterKey: master });
    onTestFinished(() => ledger.close());
    await executor.started;
    const projector = await startProjector({ config, logger, masterKey: master, port: 0, apiToken: TOKEN, defaultMetrics: false });
    onTestFinished(() => projector.stop());

    const { planId } = await ledger.createPlan({
      goal: 'charge a card',
      mode: 'execute',
      items: [
        { id: 'charge', title: 'Charge', why: 'the order is due', tool: 'pay.charge', input: { card: { number: marker, cvc: '123' }, token: `${marker}-tok`, amount: 5 }, secret: ['card.number', 'token'] },
        { id: 'after', title: 'After', why: 'check', tool: 'pay.after', input: {}, dependsOn: ['charge'] },
      ],
    });
    const done = await ledger.waitFor(planId, 'completed', { timeoutMs: 60_000 });
    // The tool got the real values; its dependant the real output; the library reads them back decrypted.
    expect(seenByTool).toEqual([marker, `${marker}-tok`]);
    expect(JSON.parse(done.items['after']!.outputJson!)).toEqual({ sameCard: true });
    expect(JSON.parse(done.items['charge']!.inputJson)).toEqual({ amount: 5, card: { cvc: '123', number: marker }, token: `${marker}-tok` });
    expect(JSON.parse(done.items['charge']!.checkpoint!.stateJson)).toEqual({ card: { number: marker }, step: 1 });

    // The API shows the plan decrypted (cvc is readable) with its secret fields redacted.
    await waitFor(() => projector.plan(planId)?.state?.status === 'completed', { message: 'projected' });
    const auth = { headers: { authorization: `Bearer ${TOKEN}` } };
    for (const path of [
      `/api/plans/${planId}`,
      `/api/plans/${planId}/items`,
      `/api/plans/${planId}/events`,
      `/api/plans/${planId}/events?limit=50`,
      `/api/plans/${planId}/audit`,
      `/api/plans/${planId}/audit?limit=50`,
    ]) {
      const text = await (await fetch(`${projector.url}${path}`, auth)).text();
      expect(text, path).not.toContain(marker);
      expect(text, path).toContain('[secret]');
    }
    const shown = (await (await fetch(`${projector.url}/api/plans/${planId}`, auth)).json()) as { state: { items: Record<string, { inputJson: string; outputJson: string; checkpoint: { stateJson: string }; evidence: Array<{ valueJson: string }> }> } };
    expect(JSON.parse(shown.state.items['charge']!.inputJson)).toEqual({ amount: 5, card: { cvc: '123', number: '[secret]' }, token: '[secret]' });
    expect(JSON.parse(shown.state.items['charge']!.checkpoint.stateJson)).toEqual({ card: { number: '[secret]' }, step: 1 });
    expect(JSON.parse(shown.state.items['charge']!.evidence[0]!.valueJson)).toEqual({ card: { number: '[secret]' } });

    const kafka = testKafka(config);
    const admin = await testAdmin(kafka);
    const codec = await codecFromConfig(config);
    const keysTopic = topicNames(config.topicPrefix).planKeys;
    const partition = partitionFor(planId, config.partitions);
    const keyring = () => new PlanKeyring({ kafka, topic: keysTopic, partitions: config.partitions, master });

    // Before the erase: ciphertext only anywhere in the log, and the control — with the key the payloads open.
    const before = await readEverything(kafka, admin, config.topicPrefix, codec);
    expect(before.filter((s) => s.texts.some((t) => t.includes(marker))).map((s) => `${s.topic} ${s.partition}/${s.offset}`)).toEqual([]);
    const { key } = await keyring().lookup(planId);
    expect(key).toBeDefined();
    const opened = before.flatMap((s) => s.texts.flatMap(envelopesIn)).map((e) => openPayload(key!, planId, parseEnvelope(e)!));
    expect(opened.filter((p) => p.includes(marker)).length).toBeGreaterThanOrEqual(5); // command input, event input, output, checkpoint, evidence ...
    const topicsSeen = new Set(before.filter((s) => s.texts.some((t) => envelopesIn(t).length > 0)).map((s) => s.topic));
    for (const t of ['plan-commands', 'plan-events', 'plan-blobs']) expect([...topicsSeen].some((x) => x.endsWith(t)), t).toBe(true);

    // The key record is in plan-keys before the erasure (so the wait below for it to be gone is not vacuous).
    const keyRecords = () => readAll(kafka, keysTopic, [partition]);
    expect((await keyRecords()).some((r) => r.key?.toString() === planId && r.value !== null)).toBe(true);
    await ledger.erase(planId, { by: 'dpo', reason: 'GDPR request' });
    // The key is destroyed at once: a fresh reader with the master key finds a tombstone.
    const afterErase = await keyring().lookup(planId);
    expect(afterErase).toMatchObject({ key: undefined, destroyed: true });
    // Reading the plan now shows its payloads as erased rather than failing (a payload copy from the log).
    const cipherInput = before.find((s) => s.topic === topicNames(config.topicPrefix).commands)!.texts.flatMap(envelopesIn)[0]!;
    expect((await keyring().opener(planId))(cipherInput)).toBe('"[erased]"');

    // The old key record stays physically in plan-keys until its segment closes and the cleaner runs (the
    // executor writes one more record there just past segment.ms, no write from the test); the cleaner then
    // removes the old value — sometimes before the read right after the erase, so none is made there.
    await waitFor(async () => (await keyRecords()).every((r) => !(r.key?.toString() === planId && r.value !== null)), {
      timeoutMs: 90_000,
      intervalMs: PLAN_KEYS_SEGMENT_MS,
      message: 'the destroyed key record compacted away',
    });
    expect((await keyRecords()).some((r) => r.key?.toString() === '__roll')).toBe(true);

    // After: every record of every topic, raw and decoded — no plaintext marker; with the master key, no
    // key record opens anything of the plan.
    const seen = await readEverything(kafka, admin, config.topicPrefix, codec);
    expect(seen.length).toBeGreaterThan(10);
    expect(seen.filter((s) => s.texts.some((t) => t.includes(marker))).map((s) => `${s.topic} ${s.partition}/${s.offset}`)).toEqual([]);
    const liveKeys = seen.filter((s) => s.topic === keysTopic && s.texts.length > 0);
    const recoverable: string[] = [];
    const envelopes = seen.flatMap((s) => s.texts.flatMap(envelopesIn));
    expect(envelopes.length).toBeGreaterThan(0); // the ciphertext is still there (events not compacted yet, commands, DLQ)
    for (const k of liveKeys) {
      let dataKey: Buffer;
      try {
        dataKey = unwrapDataKey(master, k.key, k.texts[0]!);
      } catch {
        continue;
      }
      for (const e of envelopes) {
        try {
          if (openPayload(dataKey, planId, parseEnvelope(e)!).includes(marker)) recoverable.push(`${k.key} opens ${e.slice(0, 40)}`);
        } catch {
          // not this plan's key
        }
      }
    }
    expect(recoverable).toEqual([]);
    // The executor and projector logs never carried the marker.
    expect(logs.lines.length).toBeGreaterThan(0);
    expect(logs.lines.join('')).not.toContain(marker);
    for (const t of await admin.listTopics()) if (t.startsWith(`${config.topicPrefix}.`)) admin.track(t);
  }, 240_000);
});
