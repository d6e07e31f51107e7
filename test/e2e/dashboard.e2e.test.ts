// The dashboard in headless Chromium against a real projector, executor, broker and registry: the page
// lists plans, draws a plan's item graph and attempt timeline, and approving a proposed plan on the page
// makes it run. Leaves test-results/dashboard.png behind.
import { mkdirSync } from 'node:fs';
import type { Browser } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { startExecutor } from '../../executor/index.js';
import { startProjector } from '../../projector/index.js';
import { connectLedger } from '../../src/client/index.js';
import { defineTool } from '../../src/tools.js';
import { launchChromium } from '../support/browser.js';
import { testConfig, testLogger, waitFor } from '../support/helpers.js';
import { cleanup, testLedger } from '../projector/support.js';

const TOKEN = 'e2e-dashboard-token';

const work = defineTool({
  name: 'work',
  async run(input: { ms?: number; failFirst?: boolean }, ctx) {
    await new Promise((r) => setTimeout(r, input.ms ?? 30));
    if (input.failFirst && ctx.attempt === 1) throw new Error('transient failure on the first attempt');
    return { done: ctx.itemId };
  },
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
    const projector = await startProjector({ config, logger: testLogger, port: 0, apiToken: TOKEN, watermarkIntervalMs: 500, defaultMetrics: false });
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
      await page.goto(`${projector.url}/#release-notes`);

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
      await page.fill('#token', TOKEN);
      await page.fill('#operator', 'e2e-operator');
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
});
