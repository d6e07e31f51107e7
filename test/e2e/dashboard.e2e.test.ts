// The dashboard in headless Chromium against a real projector, executor, broker and registry: the page
// lists plans, draws a plan's item graph and attempt timeline, and approving a proposed plan on the page
// makes it run; the operator's views (problems with retry / cancel, time travel, verify, child plans, the
// overview) show what the ledger holds and act on it. Leaves test-results/dashboard*.png behind.
import { mkdirSync } from 'node:fs';
import type { Browser } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { startExecutor } from '../../executor/index.js';
import { startProjector } from '../../projector/index.js';
import { connectLedger } from '../../src/client/index.js';
import { z } from 'zod';
import { agentTools, defineAgent, defineAgentTool, runAgent } from '../../src/agent/index.js';
import { defineTool, TerminalError } from '../../src/tools.js';
import { call, response, text, scriptedModel } from '../agent/script.js';
import { launchChromium } from '../support/browser.js';
import { testConfig, testLogger, waitFor } from '../support/helpers.js';
import { cleanup, LedgerWriter, testLedger } from '../projector/support.js';

const TOKEN = 'e2e-dashboard-token-0123456789';

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
  it('lists plans, shows the graph and timeline, and approving a proposed plan on the page makes it run', async () => {
    const config = testConfig();
    await testLedger(config);
    const executor = await startExecutor({ tools: [work], config, concurrency: 4, logger: testLogger, sessionTimeoutMs: 6000, heartbeatIntervalMs: 500 });
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
    await waitFor(() => projector.plan('release-notes')?.state?.status === 'completed' && projector.plan('refund-order-42')?.state?.status === 'proposed', {
      timeoutMs: 60_000,
      message: 'plans projected',
    });

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
      expect(await page.locator('svg.graph g.node').count()).toBe(5);
      expect(await page.locator('svg.graph g.node.st-completed').count()).toBe(5);
      expect(await page.locator('svg.graph path.edge').count()).toBe(5);
      expect(await page.locator('tr[data-attempt]').count()).toBe(6); // summarize ran twice
      expect(await page.locator('tr[data-attempt="summarize/1"]').textContent()).toContain('retry');
      expect(await page.locator('tr[data-attempt="publish/1"]').textContent()).toContain(executor.executorId);
      expect(await page.locator('.events li').count()).toBeGreaterThan(15);

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
      expect(errors).toEqual([]);

      mkdirSync('test-results', { recursive: true });
      await page.screenshot({ path: 'test-results/dashboard.png', fullPage: true });
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

  it("answers a waiting item from its form, shows a fork's lineage both ways and an agent run's token usage", async () => {
    const config = testConfig({ partitions: 1 });
    await testLedger(config);
    const lookup = defineAgentTool({ name: 'lookup', description: 'Look an order up', inputSchema: z.object({ orderId: z.string() }), run: (input: { orderId: string }) => ({ orderId: input.orderId, cents: 1200 }) });
    const model = scriptedModel([response([text('Looking it up.'), call('c1', 'lookup', { orderId: 'A' })], { in: 50, out: 10 }), response([text('Order A cost 12.00.')], { in: 80, out: 7 })]);
    const agent = defineAgent({ name: 'support', model, tools: [lookup], maxTurns: 3 });
    const executor = await startExecutor({ tools: [work, ...agentTools(agent)], config, concurrency: 4, logger: testLogger, sessionTimeoutMs: 6000, heartbeatIntervalMs: 500 });
    cleanup(() => executor.stop());
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
    await ledger.waitFor(runId, 'completed', { timeoutMs: 60_000 });
    await waitFor(() => projector.plan('address-check')?.state?.items['ask']?.status === 'in_progress' && projector.plan(runId)?.state?.status === 'completed', { timeoutMs: 60_000, message: 'plans projected' });

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
      expect(errors).toEqual([]);
      mkdirSync('test-results', { recursive: true });
      await page.screenshot({ path: 'test-results/dashboard-agent.png', fullPage: true });
    } finally {
      await browser?.close();
    }
  });
});
