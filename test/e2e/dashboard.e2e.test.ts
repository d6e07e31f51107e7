// The dashboard in headless Chromium against a real projector, executor, broker and registry: the page
// lists plans, draws a plan's item graph and attempt timeline, and approving a proposed plan on the page
// makes it run; the operator's views (problems with retry / cancel, time travel, verify, child plans, the
// overview) show what the ledger holds and act on it; an item opens from the graph with its input, output,
// attempts (a take-over marked) and, for an agent turn, its text, tool calls and usage — live while the
// turn runs; the list is searched; failed items are retried and plans cancelled from the plan view; the
// executors page lists who runs with which tools; the graph is readable at 5 items and at 500; hostile
// ids, goals, labels, payloads and searches render as text or are refused with the reason.
// Leaves test-results/dashboard*.png behind (and, with PLAN_LEDGER_DOCS_SCREENSHOTS=1, the docs' screenshots in docs/).
import { copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import { gated } from '../support/model-streams.js';
import { MockLanguageModelV3 } from 'ai/test';
import type { Browser, Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { startExecutor } from '../../executor/index.js';
import { startProjector } from '../../projector/index.js';
import { connectLedger } from '../../src/client/index.js';
import { z } from 'zod';
import { agentTools, defineAgent, defineAgentTool, runAgent } from '../../src/agent/index.js';
import { defineTool, TerminalError } from '../../src/tools.js';
import { setting } from '../../src/settings.js';
import { call, response, text, scriptedModel, streamParts } from '../agent/script.js';
import { launchChromium } from '../support/browser.js';
import { testConfig, testLogger, waitFor } from '../support/helpers.js';
import { cleanup, LedgerWriter, takenOver, testLedger } from '../projector/support.js';

const TOKEN = 'e2e-dashboard-token-0123456789';
const HOSTILE_GOAL = '<img src=x onerror="window.__pwned=1">Sync <b>stock</b> & "quotes"';

const work = defineTool({
  name: 'work',
  async run(input: { ms?: number; failFirst?: boolean }, ctx) {
    await new Promise((r) => setTimeout(r, input.ms ?? 30));
    if (input.failFirst && ctx.attempt === 1) throw new Error('transient failure on the first attempt');
    return { done: ctx.itemId };
  },
});

/** Fails for good on an item's first attempt; an operator's retry makes it succeed. */
const flaky = defineTool({
  name: 'flaky',
  run(_input: unknown, ctx) {
    if (ctx.attempt === 1) throw new TerminalError('the warehouse API refused the request');
    return { attempt: ctx.attempt };
  },
});
/** Delegates its work to a child plan of two items. */
const delegate = defineTool({
  name: 'delegate',
  run: (input: { region: string }) => ({
    output: { delegated: input.region },
    delegate: {
      goal: `Restock ${input.region}`,
      items: [
        { id: 'count', title: `Count stock in ${input.region}`, why: 'know what is missing', tool: 'work' },
        { id: 'order', title: 'Order the missing stock', why: 'fill the shelves', tool: 'work', dependsOn: ['count'] },
      ],
    },
  }),
});

/** A report of `chars` characters: past 64 KiB an output goes by reference. */
const report = defineTool({ name: 'report', run: (input: { chars: number }) => ({ rows: 'r'.repeat(input.chars), chars: input.chars }) });
const charge = defineTool({ name: 'charge', run: (input: { card: { number: string } }) => ({ charged: true, last4: input.card.number.slice(-4) }) });
const mailer = defineTool({ name: 'mail.send', run: () => ({ sent: true }) });

/** A viewport screenshot into test-results/, and into docs/ too with PLAN_LEDGER_DOCS_SCREENSHOTS=1. */
async function screenshot(page: Page, name: string, opts: { docs?: boolean; fullPage?: boolean } = {}): Promise<void> {
  mkdirSync('test-results', { recursive: true });
  const path = `test-results/${name}.png`;
  await page.screenshot({ path, fullPage: opts.fullPage ?? false });
  if (opts.docs && setting('PLAN_LEDGER_DOCS_SCREENSHOTS')) copyFileSync(path, `docs/${name}.png`);
}

/** Where the graph's nodes are, against its frame: overflow to the right, nodes outside, their size on screen, the label font. */
const graphFit = (page: Page) =>
  page.evaluate(`(() => {
    const wrap = document.querySelector('#graph-wrap');
    const w = wrap.getBoundingClientRect();
    const nodes = [...wrap.querySelectorAll('g.node rect')].map((r) => r.getBoundingClientRect());
    return {
      overflow: wrap.scrollWidth - wrap.clientWidth,
      nodes: nodes.length,
      outside: nodes.filter((r) => r.left < w.left - 0.5 || r.right > w.right + 0.5).length,
      width: Math.min(...nodes.map((r) => r.width)),
      font: parseFloat(getComputedStyle(wrap.querySelector('g.node text')).fontSize),
    };
  })()`) as Promise<{ overflow: number; nodes: number; outside: number; width: number; font: number }>;

const listed = (page: Page) => page.locator('[data-plan]').evaluateAll((xs) => xs.map((x) => x.getAttribute('data-plan')).sort());

const item = (id: string, title: string, dependsOn: string[] = [], input: Record<string, unknown> = {}) => ({
  id,
  title,
  why: `${title} is part of the goal`,
  tool: 'work',
  dependsOn,
  input,
  retry: { maxAttempts: 3, initialBackoffMs: 50, backoffMultiplier: 2, maxBackoffMs: 200 },
});

describe('dashboard', () => {
  it('lists plans, shows the graph and timeline, opens items, searches, retries from the plan view, and approving a proposed plan on the page makes it run', async () => {
    const config = testConfig();
    await testLedger(config);
    const executor = await startExecutor({ tools: [work, flaky], config, concurrency: 4, logger: testLogger, sessionTimeoutMs: 6000, heartbeatIntervalMs: 500 });
    cleanup(() => executor.stop());
    const projector = await startProjector({ config, logger: testLogger, port: 0, apiTokens: [{ token: TOKEN, principal: 'e2e-operator', scopes: ['read', 'write'] }], watermarkIntervalMs: 500, defaultMetrics: false });
    cleanup(() => projector.stop());
    const ledger = await connectLedger(config, { logger: testLogger });
    cleanup(() => ledger.close());
    await executor.started;

    await ledger.createPlan({
      planId: 'release-notes',
      goal: 'Publish the release notes for 2.4',
      mode: 'execute',
      labels: { team: 'docs' },
      items: [
        item('collect', 'Collect merged PRs', [], { ms: 40 }),
        item('summarize', 'Summarize changes', ['collect'], { ms: 80, failFirst: true }),
        item('screenshots', 'Refresh screenshots', ['collect'], { ms: 60 }),
        item('draft', 'Draft the notes', ['summarize', 'screenshots'], { ms: 50 }),
        item('publish', 'Publish to the blog', ['draft'], { ms: 30 }),
      ],
    });
    const proposal = await ledger.createPlan({
      planId: 'refund-order-42',
      goal: 'Refund order 42 and tell the customer',
      mode: 'propose',
      labels: { team: 'support' },
      items: [
        item('lookup', 'Look up the order'),
        item('refund', 'Issue the refund', ['lookup'], { ms: 60 }),
        item('ledger', 'Record it in the books', ['refund']),
        item('email', 'Email the customer', ['refund']),
      ],
    });
    await ledger.propose('refund-order-42');
    // Markup and script in a goal, a label, a title, a why and an input: shown as text, never run. Its item fails for good.
    await ledger.createPlan({
      planId: 'hostile-plan',
      goal: HOSTILE_GOAL,
      mode: 'execute',
      labels: { team: '<script>window.__pwned=2</script>' },
      items: [{ id: 'grab', title: '<svg onload="window.__pwned=3">', why: '<iframe src="javascript:window.__pwned=4">', tool: 'flaky', input: { html: '<script>window.__pwned=5</script>' } }],
    });
    // 500 items in chains of ten (a draft: nothing runs).
    await ledger.createPlan({
      planId: 'wide-500',
      goal: 'Migrate five hundred tables',
      mode: 'propose',
      labels: { team: 'data' },
      items: Array.from({ length: 500 }, (_, i) => ({ id: `w-${i}`, title: `Migrate table ${i}`, why: 'the old store retires', tool: 'work', dependsOn: i % 10 ? [`w-${i - 1}`] : [] })),
    });
    await waitFor(
      () =>
        projector.plan('release-notes')?.state?.status === 'completed' &&
        projector.plan('refund-order-42')?.state?.status === 'proposed' &&
        projector.plan('hostile-plan')?.state?.status === 'failed' &&
        projector.plan('wide-500')?.state?.itemOrder.length === 500,
      { timeoutMs: 60_000, message: 'plans projected' },
    );

    let browser: Browser | undefined;
    try {
      browser = await launchChromium();
      const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(e.message));
      // Reads need a token too: the page keeps it in localStorage, as after typing it once.
      await page.addInitScript(`localStorage.setItem('plan-ledger.token', ${JSON.stringify(TOKEN)})`);
      await page.goto(`${projector.url}/#release-notes`);
      await page.locator('#principal', { hasText: 'e2e-operator (read, write)' }).waitFor();

      // The list shows both plans with their status.
      await page.waitForSelector('[data-plan="refund-order-42"]');
      expect(await page.locator('[data-plan="release-notes"] .pill').textContent()).toBe('completed');
      expect(await page.locator('[data-plan="refund-order-42"] .pill').textContent()).toBe('proposed');

      // The graph: one node per item, completed; edges for the dependencies; attempts with the retry.
      await page.waitForSelector('svg.graph g.node[data-item="publish"]');
      // Readable at 5 items: every node inside the frame (none cut off on the right), drawn at full size.
      expect(await graphFit(page)).toEqual({ overflow: 0, nodes: 5, outside: 0, width: 176, font: 12 });
      expect(await page.locator('svg.graph g.node').count()).toBe(5);
      expect(await page.locator('svg.graph g.node.st-completed').count()).toBe(5);
      expect(await page.locator('svg.graph path.edge').count()).toBe(5);
      expect(await page.locator('tr[data-attempt]').count()).toBe(6); // summarize ran twice
      expect(await page.locator('tr[data-attempt="summarize/1"]').textContent()).toContain('retry');
      expect(await page.locator('tr[data-attempt="publish/1"]').textContent()).toContain(executor.executorId);
      expect(await page.locator('.events li').count()).toBeGreaterThan(15);
      await screenshot(page, 'dashboard-plan', { docs: true });

      // An item opened from the graph: its input and output, both attempts with the first one's error.
      await page.locator('svg.graph g.node[data-item="summarize"]').click();
      await page.locator('#item-title', { hasText: 'Summarize changes' }).waitFor();
      expect(new URL(page.url()).hash).toBe('#release-notes/summarize');
      expect(await page.locator('[data-payload="input"] pre').textContent()).toBe('{\n  "failFirst": true,\n  "ms": 80\n}');
      expect(await page.locator('[data-payload="output"] pre').textContent()).toBe('{\n  "done": "summarize"\n}');
      expect(await page.locator('[data-payload="input"] .size').textContent()).toBe('26 bytes');
      expect(await page.locator('#item-attempts tr[data-item-attempt]').count()).toBe(2);
      expect(await page.locator('#item-attempts tr[data-item-attempt="1"]').textContent()).toContain('transient failure on the first attempt');
      expect(await page.locator('#item-attempts tr[data-item-attempt="2"]').textContent()).toContain(executor.executorId);
      expect(await page.locator('svg.graph g.node.open').getAttribute('data-item')).toBe('summarize');
      await page.locator('#item-close').click();
      await page.locator('#item').waitFor({ state: 'hidden' });
      expect(new URL(page.url()).hash).toBe('#release-notes');

      // Approve the proposed plan on the page.
      await page.locator('[data-plan="refund-order-42"]').click();
      await page.waitForSelector('#approve');
      expect(await page.locator('#digest').textContent()).toBe(proposal.digest);
      expect(await page.locator('svg.graph g.node.st-pending').count()).toBe(4);
      await page.locator('#approve').click();

      // The approval reached the ledger, the executor ran the plan, the page followed live.
      const approved = await ledger.waitFor('refund-order-42', 'completed', { timeoutMs: 60_000 });
      expect(approved.approvals).toMatchObject([{ decision: 'approved', by: 'e2e-operator', digest: proposal.digest }]);
      await page.locator('svg.graph g.node.st-completed').nth(3).waitFor({ timeout: 30_000 });
      await page.locator('[data-plan="refund-order-42"] .pill', { hasText: 'completed' }).waitFor({ timeout: 30_000 });
      expect(await page.locator('svg.graph g.node.st-completed').count()).toBe(4);
      expect(await page.locator('tr[data-attempt]').count()).toBe(4);
      await screenshot(page, 'dashboard', { fullPage: true });

      // Search, on the server: by label, goal and id; what no plan holds; a huge and a control-character search.
      const asked: string[] = [];
      page.on('request', (r) => r.url().includes('/api/plans?') && asked.push(decodeURIComponent(new URL(r.url()).searchParams.get('q') ?? '')));
      const search = async (q: string) => {
        await page.locator('#search').fill(q);
        await page.locator('#search').press('Enter');
      };
      await search('DOCS');
      await expect.poll(() => listed(page)).toEqual(['release-notes']);
      await search('refund order');
      await expect.poll(() => listed(page)).toEqual(['refund-order-42']);
      await search('wide-5');
      await expect.poll(() => listed(page)).toEqual(['wide-500']);
      await search('<script>'); // a label holds it: found as text
      await expect.poll(() => listed(page)).toEqual(['hostile-plan']);
      await search('no plan is called this');
      await page.locator('#list-message', { hasText: 'No plan\'s id, goal or label holds “no plan is called this”.' }).waitFor();
      await search('x'.repeat(5000));
      await page.locator('#search-note', { hasText: 'A search is at most 200 characters; this one has 5,000.' }).waitFor();
      expect(await page.locator('[data-plan]').count()).toBe(0);
      expect(asked.filter((q) => q.length > 200)).toEqual([]); // refused in the page, never sent
      await search('ab\u0007cd');
      await page.locator('#search-note', { hasText: 'q: a search cannot hold control characters (U+0007 at 3)' }).waitFor();
      expect(await page.locator('#list-message').textContent()).toBe('No search: q: a search cannot hold control characters (U+0007 at 3)');
      await search('');
      await expect.poll(() => listed(page)).toEqual(['hostile-plan', 'refund-order-42', 'release-notes', 'wide-500']);
      expect(await page.locator('#search-note').textContent()).toBe('');

      // A hostile plan: its markup shows as text, nothing of it runs; its failed item is retried from the plan view.
      await page.goto(`${projector.url}/#hostile-plan`);
      await page.locator('#failed-items [data-failed-item="grab"]').waitFor();
      expect(await page.locator('h1').textContent()).toBe(HOSTILE_GOAL);
      expect(await page.locator('[data-plan="hostile-plan"] .goal').textContent()).toBe(HOSTILE_GOAL);
      expect(await page.locator('.d-head .label').textContent()).toBe('team: <script>window.__pwned=2</script>');
      expect(await page.locator('#failed-items').textContent()).toContain('TERMINAL');
      expect(await page.locator('#failed-items').textContent()).toContain('the warehouse API refused the request');
      await page.locator('svg.graph g.node[data-item="grab"]').click();
      await page.locator('#item-title', { hasText: '<svg onload="window.__pwned=3">' }).waitFor();
      expect(await page.locator('#item .why').textContent()).toBe('<iframe src="javascript:window.__pwned=4">');
      expect(await page.locator('[data-payload="input"] pre').textContent()).toBe('{\n  "html": "<script>window.__pwned=5</script>"\n}');
      expect(await page.locator('#item-error-message').textContent()).toBe('the warehouse API refused the request');
      expect(await page.evaluate('window.__pwned')).toBeUndefined();
      expect(await page.locator('img[src="x"], svg[onload], iframe, script:not([src])').count()).toBe(0);
      await page.locator('#item-close').click();
      await page.locator('#failed-items button[data-retry="hostile-plan/grab"]').click();
      const retried = await ledger.waitFor('hostile-plan', 'completed', { timeoutMs: 60_000 });
      expect(retried.items['grab']!.attempts).toHaveLength(2);
      expect((await ledger.planEvents('hostile-plan')).filter((r) => r.event.type === 'ItemRetryScheduled').map((r) => r.event.actor)).toEqual(['e2e-operator']);
      await page.locator('[data-plan="hostile-plan"] .pill', { hasText: 'completed' }).waitFor({ timeout: 30_000 });
      await page.locator('#failed-items').waitFor({ state: 'detached' });
      // A plan id that is markup, in the address: the API's refusal, as text.
      await page.goto(`${projector.url}/#${encodeURIComponent('<img src=x onerror=window.__pwned=6>')}`);
      await page.locator('#detail-error').waitFor();
      expect(await page.locator('#detail-error').textContent()).toBe('Plan <img src=x onerror=window.__pwned=6>: params: id must match pattern "^[A-Za-z0-9._:-]{1,128}$"');
      expect(await page.evaluate('window.__pwned')).toBeUndefined();

      // Readable at 500 items: the graph of a page of 100, wrapped into the frame, compact and unscaled; a node opens its item.
      await page.goto(`${projector.url}/#wide-500`);
      await page.locator('#items-range', { hasText: '1–100 of 500' }).waitFor({ timeout: 30_000 });
      expect(await graphFit(page)).toEqual({ overflow: 0, nodes: 100, outside: 0, width: 150, font: 11 });
      await screenshot(page, 'dashboard-500');
      await page.locator('svg.graph g.node[data-item="w-42"]').click();
      await page.locator('#item-title', { hasText: 'Migrate table 42' }).waitFor();
      expect(await page.locator('#item table.meta').textContent()).toBe('depends onw-41needed byw-43');
      await page.keyboard.press('Escape');
      await page.locator('#item').waitFor({ state: 'hidden' });
      // Cancel from the plan view (a draft): recorded with the token's principal.
      page.once('dialog', (d) => void d.accept('not this quarter'));
      await page.locator('#plan-cancel').click();
      const cancelled = await ledger.waitFor('wide-500', 'cancelled', { timeoutMs: 60_000 });
      expect(cancelled.status).toBe('cancelled');
      expect((await ledger.planEvents('wide-500')).filter((r) => r.event.type === 'PlanCancelled').map((r) => r.event.actor)).toEqual(['e2e-operator']);
      expect(errors).toEqual([]);
    } finally {
      await browser?.close();
    }
  });

  it("shows the operator's views: problems with retry and cancel, time travel, verify, child plans both ways, the overview", async () => {
    const config = testConfig();
    const l = await testLedger(config);
    const executor = await startExecutor({ tools: [work, flaky, delegate], config, concurrency: 4, logger: testLogger, sessionTimeoutMs: 6000, heartbeatIntervalMs: 500 });
    cleanup(() => executor.stop());
    const projector = await startProjector({ config, logger: testLogger, port: 0, apiTokens: [{ token: TOKEN, principal: 'e2e-operator', scopes: ['read', 'write'] }], watermarkIntervalMs: 500, defaultMetrics: false });
    cleanup(() => projector.stop());
    const ledger = await connectLedger(config, { logger: testLogger });
    cleanup(() => ledger.close());
    await executor.started;

    // A finished plan to travel through; a plan whose item fails for good; a plan that delegates to a
    // child; a proposed plan that will stall on a poison record.
    await ledger.createPlan({ planId: 'ship-order-7', goal: 'Ship order 7', mode: 'execute', items: [item('pick', 'Pick the items'), item('pack', 'Pack the box', ['pick']), item('label', 'Print the label', ['pack'])] });
    await ledger.createPlan({ planId: 'sync-stock', goal: 'Sync stock with the warehouse', mode: 'execute', items: [{ id: 'push', title: 'Push stock levels', why: 'the shop shows stock', tool: 'flaky', dependsOn: [], input: {} }] });
    await ledger.createPlan({ planId: 'restock', goal: 'Restock the north store', mode: 'execute', items: [{ id: 'north', title: 'Restock north', why: 'shelves are empty', tool: 'delegate', dependsOn: [], input: { region: 'north' } }] });
    await ledger.createPlan({ planId: 'stuck-plan', goal: 'A plan the projector cannot read further', mode: 'propose', items: [item('only', 'The only step')] });
    await ledger.propose('stuck-plan');
    await waitFor(
      () =>
        projector.plan('ship-order-7')?.state?.status === 'completed' &&
        projector.plan('sync-stock')?.state?.status === 'failed' &&
        projector.plan('restock')?.state?.status === 'completed' &&
        projector.plan('stuck-plan')?.state?.status === 'proposed',
      { timeoutMs: 60_000, message: 'plans projected' },
    );
    const child = [...projector.states().values()].find((st) => st.parent?.planId === 'restock')!;
    expect(child.parent).toEqual({ planId: 'restock', itemId: 'north' });
    expect(child.status).toBe('completed');
    // Garbage bytes as the stuck plan's next event: the projector dead-letters them and stalls the plan.
    const stuckSeq = projector.plan('stuck-plan')!.state!.seq + 1;
    await new LedgerWriter(l).appendRaw('stuck-plan', stuckSeq, Buffer.from('not avro at all', 'utf8'));
    await waitFor(() => projector.plan('stuck-plan')?.stalled, { timeoutMs: 30_000, message: 'stuck-plan stalled' });
    const stall = projector.plan('stuck-plan')!.stalled!;

    let browser: Browser | undefined;
    try {
      browser = await launchChromium();
      const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(e.message));
      await page.addInitScript(`localStorage.setItem('plan-ledger.token', ${JSON.stringify(TOKEN)})`);
      mkdirSync('test-results', { recursive: true });

      // Problems: the stalled plan with its cause and source offset, its DLQ record, the failed item.
      await page.goto(`${projector.url}/#/problems`);
      await page.waitForSelector('#page[data-loaded="problems"]');
      const stalledRow = page.locator('tr[data-stalled="stuck-plan"]');
      expect(await stalledRow.textContent()).toContain(`SCHEMA bad_magic`);
      expect(await stalledRow.textContent()).toContain(`@ ${stall.offset} (seq ${stuckSeq})`);
      const dlq = page.locator('tr[data-dlq]');
      expect(await dlq.count()).toBe(1);
      expect(await dlq.locator('[data-source]').getAttribute('data-source')).toBe(`${config.topicPrefix}.plan-events/${projector.plan('stuck-plan')!.partition}/${stall.offset}`);
      expect(await dlq.textContent()).toContain('stuck-plan');
      expect(await page.locator('tr[data-failed="sync-stock/push"]').textContent()).toContain('the warehouse API refused the request');
      expect(await page.locator('#problem-count').textContent()).toBe('3');
      await page.screenshot({ path: 'test-results/dashboard-problems.png', fullPage: true });

      // Retry the failed item from the page: it runs again and the plan completes.
      await page.locator('button[data-retry="sync-stock/push"]').click();
      const synced = await ledger.waitFor('sync-stock', 'completed', { timeoutMs: 60_000 });
      expect(synced.items['push']!.attempts).toHaveLength(2);
      await page.locator('tr[data-failed="sync-stock/push"]').waitFor({ state: 'detached', timeout: 30_000 });
      // Cancel the stalled plan from the page; the executor records it with the token's principal.
      page.once('dialog', (d) => void d.accept('stuck behind a poison record'));
      await page.locator('tr[data-stalled="stuck-plan"] button[data-cancel="stuck-plan"]').click();
      // (The log of this plan holds the poison record, so ask its owner rather than re-read the log.)
      await page.locator('#toast', { hasText: 'cancel stuck-plan: PlanCancelled' }).waitFor({ timeout: 30_000 });
      await waitFor(() => executor.planState('stuck-plan')?.status === 'cancelled', { timeoutMs: 30_000, message: 'stuck-plan cancelled by its owner' });

      // Time travel: the slider at the first ItemCompleted shows one completed item, as the as-of fold does.
      const events = (await ledger.planEvents('ship-order-7')).map((r) => r.event);
      const firstDone = events.find((e) => e.type === 'ItemCompleted')!.seq;
      const addedBy = events.filter((e) => e.type === 'ItemAdded' && e.seq <= firstDone).length;
      await page.goto(`${projector.url}/#ship-order-7`);
      await page.waitForSelector('svg.graph g.node[data-item="label"]');
      expect(await page.locator('svg.graph g.node.st-completed').count()).toBe(3);
      await page.evaluate(`(() => { const r = document.querySelector('#asof'); r.value = '${firstDone}'; r.dispatchEvent(new Event('input', { bubbles: true })); })()`);
      await page.locator('#asof-label', { hasText: `as of seq ${firstDone} of ${events.length}` }).waitFor();
      expect(await page.locator('svg.graph g.node').count()).toBe(addedBy);
      expect(await page.locator('svg.graph g.node.st-completed').count()).toBe(1);
      expect(await page.locator('.events li').count()).toBe(firstDone);
      await page.screenshot({ path: 'test-results/dashboard-time-travel.png', fullPage: true });
      await page.locator('#asof-now').click();
      await page.locator('#asof-label', { hasText: `now · seq ${events.length}` }).waitFor();
      expect(await page.locator('svg.graph g.node.st-completed').count()).toBe(3);

      // Verify on request: chain, determinism and snapshots hold.
      await page.locator('#verify').click();
      await page.locator('#verify-badge[data-state="ok"]').waitFor({ timeout: 30_000 });
      expect(await page.locator('#verify-badge').textContent()).toBe(`verified ✓ ${events.length} events`);
      expect(await page.locator('#verify-checks').textContent()).toContain('✓ chain');
      expect(await page.locator('#verify-checks').textContent()).not.toContain('✗');

      // Child plans, both ways: the delegating item links its child, the child links back.
      await page.goto(`${projector.url}/#restock`);
      await page.locator(`#children a[data-child="${child.planId}"]`).waitFor();
      expect(await page.locator('#children').textContent()).toContain(`north → ${child.planId} (completed)`);
      expect(await page.locator(`a[data-child-attempt="${child.planId}"]`).count()).toBe(1);
      await page.locator(`#children a[data-child="${child.planId}"]`).click();
      await page.locator('#parent a[data-parent="restock"]').waitFor();
      expect(await page.locator('#parent').textContent()).toBe('delegated by item north of restock (completed)');
      expect(await page.locator('svg.graph g.node').count()).toBe(2);
      await page.screenshot({ path: 'test-results/dashboard-child-plan.png', fullPage: true });

      // Overview: plans by status, activity, both groups with members, partitions and lag.
      await page.goto(`${projector.url}/#/overview`);
      await page.waitForSelector('#page[data-loaded="overview"]');
      const stat = async (status: string) => Number(await page.locator(`#by-status [data-status="${status}"] b`).textContent());
      expect(await stat('completed')).toBe(4); // ship-order-7, sync-stock, restock and its child
      // The stuck plan's cancel sits behind the poison record: the projection still holds it as proposed, stalled.
      expect(await stat('proposed')).toBe(1);
      expect(await stat('stalled')).toBe(1);
      expect(Number(await page.locator('#items-completed b').textContent())).toBeGreaterThanOrEqual(7);
      expect(Number(await page.locator('#items-failed b').textContent())).toBe(1);
      const executors = page.locator(`[data-group="${config.topicPrefix}.executors"]`);
      expect(await executors.locator('tr[data-member]').count()).toBe(1);
      expect(await executors.locator('tr[data-member] td').nth(3).textContent()).toBe(`plan-commands: ${Array.from({ length: config.partitions }, (_, i) => i).join(',')}`);
      expect(await page.locator(`[data-group="${config.topicPrefix}.projector"] tr[data-member]`).count()).toBe(1);
      expect(await page.locator(`[data-lag="${config.topicPrefix}.projector/${config.topicPrefix}.plan-events"]`).count()).toBe(1);
      await page.screenshot({ path: 'test-results/dashboard-overview.png', fullPage: true });
      expect(errors).toEqual([]);
    } finally {
      await browser?.close();
    }
  });

  it("answers a waiting item from its form, shows a fork's lineage, an agent run's usage, an opened turn (recorded and live), payloads by reference, a take-over and the executors", async () => {
    const config = testConfig({ partitions: 1 });
    const l = await testLedger(config);
    // A take-over as the log records it: ex-killed started the refund, ex-survivor re-invoked and committed it.
    const writer = new LedgerWriter(l);
    for (const step of takenOver('refund-taken-over')) await writer.run(step);
    const lookup = defineAgentTool({ name: 'lookup', description: 'Look an order up', inputSchema: z.object({ orderId: z.string() }), run: (input: { orderId: string }) => ({ orderId: input.orderId, cents: 1200 }) });
    const model = scriptedModel([response([text('Looking it up.'), call('c1', 'lookup', { orderId: 'A' })], { in: 50, out: 10 }), response([text('Order A cost 12.00.')], { in: 80, out: 7 })]);
    const agent = defineAgent({ name: 'support', model, tools: [lookup], maxTurns: 3 });
    // A model that streams half its words, then waits for the test: the turn runs while the page reads it.
    const WORDS = Array.from({ length: 30 }, (_, i) => `word${i}`).join(' ') + '.';
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const parts = streamParts(response([text(WORDS)], { in: 12, out: 30 }));
    const half = parts.findIndex((p) => p.type === 'text-delta' && p.delta.includes('word15'));
    const writerModel = new MockLanguageModelV3({ doStream: async () => ({ stream: gated(parts.slice(0, half), gate, parts.slice(half)) }) });
    const writerAgent = defineAgent({ name: 'writer', model: writerModel, tools: [] });
    const tools = [work, report, charge, ...agentTools(agent, writerAgent)];
    const executor = await startExecutor({ executorId: 'ex-main', tools, config, concurrency: 4, logger: testLogger, sessionTimeoutMs: 6000, heartbeatIntervalMs: 500 });
    cleanup(() => executor.stop());
    await executor.started;
    // A second executor with one more tool: both serve everything the plans here need, whoever owns the partition.
    const second = await startExecutor({ executorId: 'ex-mail', tools: [...tools, mailer], config, concurrency: 4, logger: testLogger, sessionTimeoutMs: 6000, heartbeatIntervalMs: 500 });
    cleanup(() => second.stop());
    await second.started;
    await waitFor(() => executor.ownedPartitions().length + second.ownedPartitions().length === 1, { timeoutMs: 30_000, message: 'the partition owned once' });
    const projector = await startProjector({
      config,
      logger: testLogger,
      port: 0,
      apiTokens: [
        { token: TOKEN, principal: 'e2e-operator', scopes: ['read', 'write'] },
        { token: `${TOKEN}-read`, principal: 'e2e-viewer', scopes: ['read'] },
      ],
      watermarkIntervalMs: 500,
      defaultMetrics: false,
    });
    cleanup(() => projector.stop());
    const ledger = await connectLedger(config, { logger: testLogger });
    cleanup(() => ledger.close());
    await executor.started;

    await ledger.createPlan({
      planId: 'address-check',
      goal: 'Ship to the address the customer confirms',
      mode: 'execute',
      items: [
        { id: 'ask', title: 'Ask the customer', why: 'two addresses on file', wait: { signal: 'customer-reply', timeoutMs: null, prompt: 'Which address: home or office?' } },
        item('ship', 'Ship the parcel', ['ask']),
      ],
    });
    const { planId: runId } = await runAgent(ledger, { agent, goal: 'What did order A cost?', mode: 'execute' });
    await ledger.createPlan({
      planId: 'big-report',
      goal: 'Export the quarter',
      mode: 'execute',
      items: [
        { id: 'big', title: 'The whole ledger', why: 'the auditors asked', tool: 'report', input: { chars: 300_000 } },
        { id: 'mid', title: 'The summary', why: 'for the board', tool: 'report', input: { chars: 40_000 } },
        { id: 'pay', title: 'Pay the auditors', why: 'their invoice', tool: 'charge', input: { card: { number: '4111111111111111' } }, secret: ['card.number'] },
      ],
    });
    await ledger.waitFor(runId, 'completed', { timeoutMs: 60_000 });
    await waitFor(
      () =>
        projector.plan('address-check')?.state?.items['ask']?.status === 'in_progress' &&
        projector.plan(runId)?.state?.status === 'completed' &&
        projector.plan('big-report')?.state?.status === 'completed' &&
        projector.plan('refund-taken-over')?.state?.status === 'completed',
      { timeoutMs: 60_000, message: 'plans projected' },
    );

    let browser: Browser | undefined;
    try {
      browser = await launchChromium();
      const errors: string[] = [];
      // A read token sees what the wait asks and the command that answers it; no form.
      const viewer = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
      viewer.on('pageerror', (e) => errors.push(e.message));
      await viewer.addInitScript(`localStorage.setItem('plan-ledger.token', ${JSON.stringify(`${TOKEN}-read`)})`);
      await viewer.goto(`${projector.url}/#address-check`);
      await viewer.locator('#principal', { hasText: 'e2e-viewer (read)' }).waitFor();
      await viewer.waitForSelector('[data-wait="ask"]');
      expect(await viewer.locator('[data-prompt="ask"]').textContent()).toBe('Which address: home or office?');
      expect(await viewer.locator('[data-wait="ask"]').textContent()).toContain('plan-ledger signal address-check customer-reply --data @answer.json');
      expect(await viewer.locator('textarea[data-answer]').count()).toBe(0);

      const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
      page.on('pageerror', (e) => errors.push(e.message));
      await page.addInitScript(`localStorage.setItem('plan-ledger.token', ${JSON.stringify(TOKEN)})`);
      await page.goto(`${projector.url}/#address-check`);
      await page.locator('#principal', { hasText: 'e2e-operator (read, write)' }).waitFor();
      await page.waitForSelector('[data-wait="ask"]');
      expect(await page.locator('[data-wait="ask"]').textContent()).toContain('customer-reply (no deadline)');
      // Empty, then not JSON: each refused on the page, nothing is sent.
      await page.locator('button[data-signal="ask"]').click();
      await page.locator('.toast', { hasText: 'the answer must be JSON: it is empty' }).waitFor();
      await page.locator('textarea[data-answer="ask"]').fill('home, please');
      await page.locator('button[data-signal="ask"]').click();
      await page.locator('.toast', { hasText: 'the answer must be JSON' }).waitFor();
      expect((await ledger.planEvents('address-check')).filter((r) => r.event.type === 'ItemSignalled')).toHaveLength(0);
      await page.locator('textarea[data-answer="ask"]').fill('{"address": "home"}');
      await page.locator('button[data-signal="ask"]').click();
      const answered = await ledger.waitFor('address-check', 'completed', { timeoutMs: 60_000 });
      expect(answered.items['ask']!.outputJson).toBe('{"address":"home"}');
      const signalled = (await ledger.planEvents('address-check')).filter((r) => r.event.type === 'ItemSignalled');
      expect(signalled.map((r) => r.event.actor)).toEqual(['e2e-operator']);
      await page.locator('svg.graph g.node.st-completed').nth(1).waitFor({ timeout: 30_000 });
      expect(await page.locator('[data-wait]').count()).toBe(0);

      // A fork at the ship item: the fork names its source and point, the source lists the fork.
      const forked = await ledger.fork('address-check', { at: 'ship', planId: 'address-check-again' });
      await ledger.waitFor('address-check-again', 'completed', { timeoutMs: 60_000 });
      await waitFor(() => projector.plan('address-check-again')?.state?.status === 'completed', { timeoutMs: 30_000, message: 'fork projected' });
      await page.goto(`${projector.url}/#address-check-again`);
      await page.waitForSelector('#forked-from');
      expect(await page.locator('#forked-from').textContent()).toBe(`forked from address-check at seq ${forked.forkedFrom.seq} (completed) · hash ${forked.forkedFrom.chainHead.slice(0, 16)}`);
      await page.locator('a[data-origin="address-check"]').click();
      await page.waitForSelector('a[data-fork="address-check-again"]');
      expect(await page.locator('#forks').textContent()).toBe(`forks: address-check-again (completed, from seq ${forked.forkedFrom.seq})`);

      // The agent run: its totals and one row per model turn.
      await page.goto(`${projector.url}/#${runId}`);
      await page.waitForSelector('#usage');
      expect(await page.locator('#usage-totals').textContent()).toBe('2 turns · 130 in / 17 out / 147 tokens');
      expect(await page.locator('#turns tr[data-turn]').count()).toBe(2);
      expect(await page.locator('#turns tr[data-turn="turn-1"]').textContent()).toContain('tool-calls');
      expect(model.doStreamCalls).toHaveLength(2);
      await screenshot(page, 'dashboard-agent', { fullPage: true });

      // A turn opened from the graph: the model's text, its tool call with the arguments and the item that ran it, the usage.
      await page.locator('svg.graph g.node[data-item="turn-1"]').click();
      await page.locator('#turn-text').waitFor();
      expect(await page.locator('#turn-text').textContent()).toBe('Looking it up.');
      expect(await page.locator('#turn-usage').textContent()).toBe('50 in / 10 out / 60 tokens · run so far 60 tokens in 1 turn');
      expect(await page.locator('#turn-meta').textContent()).toBe('model mock-model-id · finish tool-calls · next turn-2');
      const callRow = page.locator('#turn-calls tr[data-call="c1"]');
      expect(await callRow.locator('td').nth(0).textContent()).toBe('lookup');
      expect(await callRow.locator('td').nth(1).textContent()).toBe('{"orderId":"A"}');
      const callItem = await callRow.locator('a[data-open-item]').getAttribute('data-open-item');
      await screenshot(page, 'dashboard-agent-turn', { docs: true });
      // Its tool call's item, one click on: the arguments as its input, the tool's result as its output.
      await callRow.locator('a[data-open-item]').click();
      await page.locator('#item-title', { hasText: 'lookup' }).waitFor();
      expect(new URL(page.url()).hash).toBe(`#${runId}/${callItem}`);
      expect(await page.locator('[data-payload="output"] pre').textContent()).toContain('"cents": 1200');

      // A turn while it runs: its text on the page before the turn is recorded, then the recorded text.
      const { planId: liveId } = await runAgent(ledger, { agent: writerAgent, goal: 'Write thirty words' });
      await waitFor(() => projector.plan(liveId)?.state?.items['turn-1']?.status === 'in_progress', { timeoutMs: 60_000, message: 'the turn started' });
      await page.goto(`${projector.url}/#${liveId}/turn-1`);
      await page.locator('#live-text', { hasText: 'word14' }).waitFor({ timeout: 30_000 });
      const early = await page.locator('#live-text').textContent();
      expect(early).toBe(WORDS.slice(0, WORDS.indexOf(' word15')));
      expect((await ledger.getPlan(liveId))!.items['turn-1']!.attempts.map((a) => a.outcome)).toEqual([null]); // not recorded yet
      expect(await page.locator('#item .pill').first().textContent()).toBe('in progress');
      await screenshot(page, 'dashboard-live-turn');
      release();
      await page.locator('#turn-text').waitFor({ timeout: 60_000 });
      const recorded = JSON.parse((await ledger.waitFor(liveId, 'completed', { timeoutMs: 60_000 })).items['turn-1']!.outputJson!) as { text: string };
      expect(recorded.text).toBe(WORDS);
      expect(await page.locator('#turn-text').textContent()).toBe(WORDS);
      expect(await page.locator('#live-output').count()).toBe(0);
      expect(writerModel.doStreamCalls).toHaveLength(1);

      // Payloads: by reference (size, download through the API), inline but large (its start, size, download), secret.
      await page.goto(`${projector.url}/#big-report/big`);
      const bigOut = page.locator('[data-payload="output"]');
      await bigOut.waitFor();
      const bigJson = JSON.stringify({ chars: 300_000, rows: 'r'.repeat(300_000) });
      expect(await bigOut.locator('.size').textContent()).toBe(`293.0 KiB (${bigJson.length.toLocaleString('en-US')} bytes)`);
      expect(await bigOut.locator('.payload-note').textContent()).toMatch(/^stored by reference \(sha256 [0-9a-f]{12}…, 1 chunk\): not shown here, download it$/);
      expect(await bigOut.locator('pre').count()).toBe(0);
      const [download] = await Promise.all([page.waitForEvent('download'), bigOut.locator('button[data-download="output"]').click()]);
      expect(download.suggestedFilename()).toBe('big-report-big-output.json');
      expect(readFileSync((await download.path())!, 'utf8')).toBe(bigJson);
      await page.goto(`${projector.url}/#big-report/mid`);
      const midOut = page.locator('[data-payload="output"]');
      await midOut.waitFor();
      const midBytes = JSON.stringify({ chars: 40_000, rows: 'r'.repeat(40_000) }).length;
      expect(await midOut.locator('.payload-note').textContent()).toBe(`the first 16,384 characters of 39.1 KiB (${midBytes.toLocaleString('en-US')} bytes): download it whole`);
      expect((await midOut.locator('pre').textContent())!.length).toBe(16_384 + 2);
      await page.goto(`${projector.url}/#big-report/pay`);
      await page.locator('[data-payload="input"] pre', { hasText: '[secret]' }).waitFor();
      expect(await page.locator('[data-payload="input"] pre').textContent()).toBe('{\n  "card": {\n    "number": "[secret]"\n  }\n}');
      expect(await page.content()).not.toContain('4111111111111111');

      // A take-over: marked on the attempt the survivor re-invoked, in the plan's attempts and in the opened item.
      await page.goto(`${projector.url}/#refund-taken-over`);
      const mark = 'taken over: ex-killed → ex-survivor, re-invoked with the same key';
      await page.locator('tr[data-attempt="refund/1"] [data-takeover="refund/1"]', { hasText: mark }).waitFor();
      await page.locator('tr[data-attempt="refund/1"] a[data-open-item="refund"]').click();
      await page.locator('#item-attempts tr[data-item-attempt="1"] [data-takeover]', { hasText: mark }).waitFor();
      expect(await page.locator('#item-attempts tr[data-item-attempt="1"] td').nth(1).textContent()).toBe(`ex-killed${mark}`);

      // The executors: both live, with their tools, agents and partitions.
      await page.goto(`${projector.url}/#/executors`);
      await page.waitForSelector('#page[data-loaded="executors"]');
      const rows = page.locator('#executors-live tr[data-executor]');
      expect(await rows.evaluateAll((xs) => xs.map((x) => x.getAttribute('data-executor')).sort())).toEqual(['ex-mail', 'ex-main']);
      const names = tools.map((t) => t.name).sort();
      expect(await page.locator('tr[data-executor="ex-main"] [data-tools]').getAttribute('data-tools')).toBe(names.join(','));
      expect(await page.locator('tr[data-executor="ex-mail"] [data-tools]').getAttribute('data-tools')).toBe([...names, 'mail.send'].sort().join(','));
      expect(await page.locator('tr[data-executor="ex-main"] [data-tools] code').allTextContents()).toEqual(names);
      expect(await page.locator('tr[data-executor="ex-main"] [data-agents]').getAttribute('data-agents')).toBe('support,writer');
      expect(await page.locator('tr[data-executor="ex-main"] [data-agents]').textContent()).toBe('support writer');
      const owned = await rows.locator('[data-partitions]').evaluateAll((xs) => xs.map((x) => x.getAttribute('data-partitions')).sort());
      expect(owned).toEqual(['', '0']); // one partition, owned once
      expect(await page.locator('#executors-stale').textContent()).toContain('Stale (0)');
      await screenshot(page, 'dashboard-executors', { docs: true });
      expect(errors).toEqual([]);
    } finally {
      release();
      await browser?.close();
    }
  });
});
