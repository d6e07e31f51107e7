// One item opened through the API against the real stack (a real executor, projector, broker and
// registry): its payloads as previews with their sizes, a large output stored by reference and served
// whole from the blobs topic (its sha256 as referenced), secret fields "[secret]" in the view and the
// download, checkpoint and evidence, a take-over marked on the attempt it touched (in the item and in the
// audit), an agent turn's text and tool calls; bad names, unknown items and a reference to a blob that was
// never written answer 404/400 naming what is wrong. The plan list's search (`q`) too.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { startExecutor } from '../../executor/index.js';
import { startProjector, type ProjectorHandle } from '../../projector/index.js';
import { refJson } from '../../src/blobs/index.js';
import { connectLedger } from '../../src/client/index.js';
import type { AnyCommand } from '../../src/plan/index.js';
import { defineTool } from '../../src/tools.js';
import { testConfig, testLogger, waitFor } from '../support/helpers.js';
import { cleanup, commands, LedgerWriter, takenOver, testLedger } from './support.js';

const TOKEN = 'item-view-token-0123456789abcdef';

const report = defineTool({ name: 'report', run: (input: { chars: number }) => ({ rows: 'r'.repeat(input.chars), chars: input.chars }) });
const steps = defineTool({
  name: 'steps',
  async run(_input: unknown, ctx) {
    await ctx.checkpoint({ page: 3, of: 5 });
    await ctx.evidence('receipt', { id: 'R-77', cents: 1299 });
    return { pages: 5 };
  },
});
const charge = defineTool({ name: 'charge', run: (input: { card: { number: string; cvc: string } }) => ({ charged: true, last4: input.card.number.slice(-4) }) });

type Json = Record<string, unknown> & { [k: string]: unknown };
function api(p: ProjectorHandle) {
  return async (path: string): Promise<{ status: number; headers: Headers; text: string; json: Json }> => {
    const res = await fetch(`${p.url}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });
    const text = await res.text();
    let json: Json = {};
    try {
      json = JSON.parse(text) as Json;
    } catch {
      // not JSON
    }
    return { status: res.status, headers: res.headers, text, json };
  };
}

interface Payload {
  name: string;
  label: string;
  bytes: number;
  text: string | null;
  truncated: boolean;
  reference: { sha256: string; bytes: number; chunks: number } | null;
  sealed: boolean;
  download: string;
}
const sha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');

describe('an item opened through the API', () => {
  it('shows payloads with sizes (by reference: served whole), secrets redacted, checkpoint, evidence, take-overs; bad requests name the fault', async () => {
    const config = testConfig({ partitions: 2 });
    const l = await testLedger(config);
    const writer = new LedgerWriter(l);
    for (const step of takenOver('taken-over')) await writer.run(step);
    // An output whose reference names a blob that was never written (a corrupt or half-erased record).
    const dangling = refJson({ sha256: 'a'.repeat(64), bytes: 123_456, chunks: 1, at: Date.now() - 60_000 });
    await writer.run([commands.create('dangling', [{ id: 'x', title: 'X', why: 'w', dependsOn: [], tool: 'noop', inputJson: '{}', retry: null }])]);
    await writer.run([commands.intent('dangling', 'x')]);
    const commit = commands.commit('dangling', 'x', 1) as AnyCommand & { data: { outputJson: string } };
    commit.data.outputJson = dangling;
    await writer.run([commit]);

    const executor = await startExecutor({ tools: [report, steps, charge], config, concurrency: 4, logger: testLogger, sessionTimeoutMs: 6000, heartbeatIntervalMs: 500 });
    cleanup(() => executor.stop());
    const projector = await startProjector({ config, logger: testLogger, port: 0, apiTokens: [{ token: TOKEN, principal: 'reader', scopes: ['read'] }], watermarkIntervalMs: 500, defaultMetrics: false });
    cleanup(() => projector.stop());
    const ledger = await connectLedger(config, { logger: testLogger });
    cleanup(() => ledger.close());
    await executor.started;

    await ledger.createPlan({
      planId: 'open-me',
      goal: 'Open every item',
      mode: 'execute',
      labels: { team: 'billing', '<b>html</b>': '<script>x</script>' },
      items: [
        { id: 'big', title: 'A big report', why: 'stored by reference', tool: 'report', input: { chars: 300_000 } },
        { id: 'mid', title: 'A mid report', why: 'inline, cut in the view', tool: 'report', input: { chars: 40_000 } },
        { id: 'steps', title: 'Steps', why: 'checkpoint and evidence', tool: 'steps', input: {} },
        { id: 'pay', title: 'Charge the card', why: 'secret input', tool: 'charge', input: { card: { number: '4111111111111111', cvc: '123' } }, secret: ['card.number', 'card.cvc'], dependsOn: ['steps'] },
      ],
    });
    await waitFor(() => projector.plan('open-me')?.state?.status === 'completed' && projector.plan('taken-over')?.state?.status === 'completed' && projector.plan('dangling')?.state !== undefined, {
      timeoutMs: 60_000,
      message: 'plans projected',
    });
    const get = api(projector);

    // The big output: by reference, its size, no text; the download is the whole payload with the referenced sha256.
    const big = await get('/api/plans/open-me/items/big');
    expect(big.status).toBe(200);
    const bigOut = (big.json['payloads'] as Payload[]).find((p) => p.name === 'output')!;
    const expected = JSON.stringify({ chars: 300_000, rows: 'r'.repeat(300_000) });
    expect(bigOut).toMatchObject({ label: 'output', bytes: Buffer.byteLength(expected), text: null, truncated: true, sealed: false, download: '/api/plans/open-me/items/big/payloads/output' });
    expect(bigOut.reference).toEqual({ sha256: sha256(expected), bytes: Buffer.byteLength(expected), chunks: 1 });
    expect(big.text.length).toBeLessThan(20_000); // the view never carries the payload
    const whole = await get(bigOut.download);
    expect(whole.status).toBe(200);
    expect(whole.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(whole.headers.get('content-disposition')).toBe('attachment; filename="open-me-big-output.json"');
    expect(whole.text).toBe(expected);
    expect(sha256(whole.text)).toBe(bigOut.reference!.sha256);

    // The mid output: inline, 16 KiB of it in the view, its size, the rest one download away.
    const mid = await get('/api/plans/open-me/items/mid');
    const midOut = (mid.json['payloads'] as Payload[]).find((p) => p.name === 'output')!;
    const midJson = JSON.stringify({ chars: 40_000, rows: 'r'.repeat(40_000) });
    expect(midOut).toMatchObject({ bytes: midJson.length, truncated: true, reference: null });
    expect(midOut.text).toBe(midJson.slice(0, 16 * 1024));
    expect((await get(midOut.download)).text).toBe(midJson);
    const midIn = (mid.json['payloads'] as Payload[]).find((p) => p.name === 'input')!;
    expect(midIn).toMatchObject({ text: '{"chars":40000}', bytes: 15, truncated: false });

    // Checkpoint and evidence, each with its own download; the item carries no payload text of its own.
    const st = await get('/api/plans/open-me/items/steps');
    expect((st.json['payloads'] as Payload[]).map((p) => [p.name, p.label, p.text])).toEqual([
      ['input', 'input', '{}'],
      ['output', 'output', '{"pages":5}'],
      ['checkpoint', 'checkpoint 1 (attempt 1)', '{"of":5,"page":3}'],
      ['evidence-0', 'evidence: receipt', '{"cents":1299,"id":"R-77"}'],
    ]);
    expect((await get('/api/plans/open-me/items/steps/payloads/evidence-0')).text).toBe('{"cents":1299,"id":"R-77"}');
    const stItem = st.json['item'] as Json;
    expect(stItem).not.toHaveProperty('inputJson');
    expect(stItem).not.toHaveProperty('outputJson');
    expect(stItem['checkpoint']).toMatchObject({ attempt: 1, checkpoint: 1 });
    expect(stItem['evidence']).toMatchObject([{ name: 'receipt', attempt: 1 }]);
    expect(st.json['dependants']).toEqual({ ids: ['pay'], total: 1 });
    expect((st.json['timeline'] as Array<{ type: string }>).map((t) => t.type)).toEqual(['ItemAdded', 'IntentRecorded', 'ItemCheckpointed', 'EvidenceRecorded', 'ResultCommitted', 'ItemCompleted']);

    // Secrets: "[secret]" in the view and in the download; the number is nowhere.
    const pay = await get('/api/plans/open-me/items/pay');
    expect((pay.json['payloads'] as Payload[])[0]!.text).toBe('{"card":{"cvc":"[secret]","number":"[secret]"}}');
    expect(pay.text).not.toContain('4111111111111111');
    expect((await get('/api/plans/open-me/items/pay/payloads/input')).text).toBe('{"card":{"cvc":"[secret]","number":"[secret]"}}');

    // The take-over: the attempt ex-killed started and ex-survivor re-invoked, in the item and in the audit.
    const tk = await get('/api/plans/taken-over/items/refund');
    const mark = { itemId: 'refund', attempt: 1, kind: 'invoked', from: 'ex-killed', to: 'ex-survivor', idempotencyKey: 'taken-over/refund/1' };
    expect(tk.json['takeovers']).toMatchObject([mark]);
    expect(tk.json['attempts']).toMatchObject([{ attempt: 1, executorId: 'ex-killed', settlement: 'completed', takeover: mark }]);
    const audit = await get('/api/plans/taken-over/audit');
    expect(audit.json['attempts']).toMatchObject([{ itemId: 'refund', executorId: 'ex-killed', takeover: mark }]);
    const window = await get('/api/plans/taken-over/audit?limit=10');
    expect(window.json['attempts']).toMatchObject([{ itemId: 'refund', takeover: mark }]);
    const plain = await get('/api/plans/open-me/audit');
    expect((plain.json['attempts'] as Array<{ takeover: unknown }>).map((a) => a.takeover)).toEqual([null, null, null, null]);

    // Bad requests: each answers what is wrong, and the plan keeps being served.
    expect(await get('/api/plans/nope/items/big')).toMatchObject({ status: 404, json: { error: 'not_found', message: 'plan nope is not known to this projector' } });
    expect(await get('/api/plans/open-me/items/nope')).toMatchObject({ status: 404, json: { error: 'not_found', message: 'plan open-me has no item nope' } });
    expect(await get('/api/plans/open-me/items/big/payloads/checkpoint')).toMatchObject({ status: 404, json: { message: 'item big of plan open-me has no payload checkpoint' } });
    expect(await get('/api/plans/open-me/items/big/payloads/attempt-2')).toMatchObject({ status: 404 });
    expect(await get('/api/plans/open-me/items/big/payloads/attempt-0')).toMatchObject({ status: 400, json: { field: 'name' } });
    expect(await get('/api/plans/open-me/items/big/payloads/..%2F..%2Fetc')).toMatchObject({ status: 400, json: { field: 'name' } });
    expect(await get('/api/plans/open-me/items/%3Cimg%20src%3Dx%3E')).toMatchObject({ status: 400, json: { field: 'itemId' } });
    // A reference to a blob that is not there: 404 naming the payload, after the reader's short retry.
    const gone = await get('/api/plans/dangling/items/x/payloads/output');
    expect(gone.status).toBe(404);
    expect(gone.json['message']).toMatch(/^payload output of dangling\/x: /);
    expect(((await get('/api/plans/dangling/items/x')).json['payloads'] as Payload[])[1]).toMatchObject({ name: 'output', bytes: 123_456, text: null, reference: { sha256: 'a'.repeat(64) } });
    expect((await get('/api/plans/open-me/items/big')).status).toBe(200);

    // The list's search: by label, goal and id; bad text is a 400 naming q.
    const ids = async (q: string) => ((await get(`/api/plans?q=${encodeURIComponent(q)}`)).json['plans'] as Array<{ planId: string }>).map((p) => p.planId).sort();
    expect(await ids('BILLING')).toEqual(['open-me']);
    expect(await ids('every item')).toEqual(['open-me']);
    expect(await ids('taken')).toEqual(['taken-over']);
    expect(await ids('<script>x</script>')).toEqual(['open-me']); // a label value, found as text
    expect(await ids('no such plan')).toEqual([]);
    expect(await get(`/api/plans?q=${encodeURIComponent('a\u0000b')}`)).toMatchObject({ status: 400, json: { field: 'q', message: 'q: a search cannot hold control characters (U+0000 at 2)' } });
    expect(await get(`/api/plans?q=${'x'.repeat(201)}`)).toMatchObject({ status: 400, json: { field: 'q' } });
  });
});
