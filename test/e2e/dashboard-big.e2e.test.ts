// The dashboard on a 3,000-item plan in headless Chromium against a real projector, broker and registry:
// the detail view reads the header, a page of items and a window of the timeline, never the whole plan;
// the item table pages (prev / next) and filters by status with counts per status; the graph holds the
// current page only; "older events" pages the timeline back; the page follows the plan live. A small plan
// beside it still shows as before.
// Leaves test-results/dashboard-big.png behind.
import { mkdirSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { startProjector } from '../../projector/index.js';
import { launchChromium } from '../support/browser.js';
import { testConfig, testLogger, waitFor } from '../support/helpers.js';
import { bigItemId, bigPlanCommands, type BigPlanShape } from '../projector/big-plan.js';
import { cleanup, commands, LedgerWriter, testLedger } from '../projector/support.js';

const TOKEN = 'e2e-dashboard-big-token-0123456789';
const SHAPE: BigPlanShape = { items: 3000, batch: 500, completed: 150, failed: [1000, 2000], inProgress: [2500] };
const ids = (from: number, to: number) => Array.from({ length: to - from }, (_, k) => bigItemId(from + k));

const rowIds = (page: Page) => page.locator('tr[data-item-row]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-item-row')));
const nodeIds = (page: Page) => page.locator('svg.graph g.node').evaluateAll((nodes) => nodes.map((n) => n.getAttribute('data-item')));

describe('dashboard on a big plan', () => {
  it('pages the items, filters them by status, draws the graph of the current page only and pages the timeline', async () => {
    const config = testConfig({ partitions: 2 });
    const l = await testLedger(config);
    const writer = new LedgerWriter(l);
    for (const step of bigPlanCommands('big-plan', SHAPE)) await writer.run(step);
    await writer.run(bigPlanCommands('small-plan', { items: 5, batch: 5, completed: 2, failed: [], inProgress: [] }).flat());
    const big = writer.states.get('big-plan')!;
    expect(writer.events.get('big-plan')!.filter((e) => e.type === 'CommandRejected')).toEqual([]);

    const projector = await startProjector({ config, logger: testLogger, port: 0, apiTokens: [{ token: TOKEN, principal: 'e2e-reader', scopes: ['read'] }], watermarkIntervalMs: 500, defaultMetrics: false });
    cleanup(() => projector.stop());
    await waitFor(() => projector.plan('big-plan')?.state?.seq === big.seq && projector.plan('small-plan')?.state?.seq === writer.states.get('small-plan')!.seq, {
      timeoutMs: 60_000,
      message: 'plans projected',
    });

    let browser: Browser | undefined;
    try {
      browser = await launchChromium();
      const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(e.message));
      // Every API answer the page reads, with its size.
      const reads: Array<{ path: string; bytes: number }> = [];
      page.on('response', (res) => {
        const url = new URL(res.url());
        if (url.pathname.startsWith('/api/') && url.pathname !== '/api/stream') void res.body().then((b) => reads.push({ path: url.pathname + url.search, bytes: b.length }), () => {});
      });
      await page.addInitScript(`localStorage.setItem('plan-ledger.token', ${JSON.stringify(TOKEN)})`);
      await page.goto(`${projector.url}/#big-plan`);

      // The first page: 100 rows in plan order, counts per status, the graph of those 100 only.
      const range = page.locator('#items-range');
      await range.filter({ hasText: '1–100 of 3000' }).waitFor({ timeout: 30_000 });
      expect(await page.locator('h1').textContent()).toBe('goal of big-plan');
      expect(await rowIds(page)).toEqual(ids(0, 100));
      expect(await nodeIds(page)).toEqual(ids(0, 100));
      expect(await page.locator('#graph-note').textContent()).toContain('graph of items 1–100 of 3000');
      // Chains of ten: nine edges per chain inside the page.
      expect(await page.locator('svg.graph path.edge').count()).toBe(90);
      expect(await page.locator('svg.graph g.node.st-completed').count()).toBe(100);
      const chips = await page.locator('#item-filters button').evaluateAll((bs) => bs.map((b) => [b.getAttribute('data-filter'), b.textContent]));
      expect(chips).toEqual([
        ['all', 'all 3000'],
        ['pending', 'pending 2847'],
        ['in_progress', 'in progress 1'],
        ['completed', 'completed 150'],
        ['failed', 'failed 2'],
      ]);
      expect(await page.locator('#items-prev').isDisabled()).toBe(true);
      // The page stays small: no node per item of the plan.
      const elements = await page.locator('#detail *').count();
      expect(elements).toBeLessThan(4000);

      // Next page, and back.
      await page.locator('#items-next').click();
      await range.filter({ hasText: '101–200 of 3000' }).waitFor();
      expect(await rowIds(page)).toEqual(ids(100, 200));
      expect(await nodeIds(page)).toEqual(ids(100, 200));
      expect(await page.locator('svg.graph g.node.st-completed').count()).toBe(50);
      expect(await page.locator('svg.graph g.node.st-pending').count()).toBe(50);
      expect(await page.locator('#graph-note').textContent()).toContain('graph of items 101–200 of 3000');
      await page.locator('#items-prev').click();
      await range.filter({ hasText: '1–100 of 3000' }).waitFor();
      expect(await rowIds(page)).toEqual(ids(0, 100));

      // Filter by status: the failed items, then the completed ones over two pages.
      await page.locator('#item-filters button[data-filter="failed"]').click();
      await range.filter({ hasText: '1–2 of 2 failed' }).waitFor();
      expect(await rowIds(page)).toEqual([bigItemId(1000), bigItemId(2000)]);
      expect(await page.locator('svg.graph g.node.st-failed').count()).toBe(2);
      expect(await page.locator('svg.graph g.node').count()).toBe(2);
      expect(await page.locator('#items-next').isDisabled()).toBe(true);
      await page.locator('#item-filters button[data-filter="completed"]').click();
      await range.filter({ hasText: '1–100 of 150 completed' }).waitFor();
      await page.locator('#items-next').click();
      await range.filter({ hasText: '101–150 of 150 completed' }).waitFor();
      expect(await rowIds(page)).toEqual(ids(100, 150));
      await page.locator('#item-filters button[data-filter="all"]').click();
      await range.filter({ hasText: '1–100 of 3000' }).waitFor();

      // The timeline: the newest 100 events, then 100 older ones.
      const seqs = () => page.locator('.events li .seq').evaluateAll((xs) => xs.map((x) => Number(x.textContent!.slice(1))));
      const newest = Array.from({ length: 100 }, (_, i) => big.seq - i);
      expect(await seqs()).toEqual(newest);
      await page.locator('#older').click();
      await page.locator('.events li').nth(199).waitFor();
      expect(await seqs()).toEqual(Array.from({ length: 200 }, (_, i) => big.seq - i));
      expect(await page.locator('h2', { hasText: 'Timeline' }).textContent()).toBe(`Timeline (200 of ${big.seq} events, newest)`);
      mkdirSync('test-results', { recursive: true });

      // Live: the plan moves on (item 150 runs) and the page follows, keeping the events it shows.
      await writer.run([commands.intent('big-plan', bigItemId(150)), commands.commit('big-plan', bigItemId(150), 1), commands.settle('big-plan', bigItemId(150))]);
      await page.locator('#item-filters button[data-filter="completed"]', { hasText: 'completed 151' }).waitFor({ timeout: 30_000 });
      await page.locator('h2', { hasText: `Timeline (200 of ${big.seq + 3} events, newest)` }).waitFor({ timeout: 30_000 });
      expect(await seqs()).toEqual(Array.from({ length: 200 }, (_, i) => big.seq + 3 - i));
      expect(await rowIds(page)).toEqual(ids(0, 100));

      // Never the whole plan or the whole audit; every answer bounded.
      const bigReads = reads.filter((r) => r.path.startsWith('/api/plans/big-plan'));
      expect(bigReads.length).toBeGreaterThan(8);
      expect(bigReads.filter((r) => r.path === '/api/plans/big-plan' || r.path === '/api/plans/big-plan/audit')).toEqual([]);
      expect(Math.max(...bigReads.map((r) => r.bytes))).toBeLessThan(128 * 1024);

      await page.locator('h1').scrollIntoViewIfNeeded();
      await page.screenshot({ path: 'test-results/dashboard-big.png' });

      // A small plan still shows whole, as before.
      await page.locator('[data-plan="small-plan"]').click();
      await page.locator('#items-range').waitFor({ state: 'detached', timeout: 30_000 });
      await page.locator('h1', { hasText: 'goal of small-plan' }).waitFor();
      expect(await nodeIds(page)).toEqual(ids(0, 5));
      expect(await page.locator('svg.graph g.node.st-completed').count()).toBe(2);
      expect(await page.locator('#asof').count()).toBe(1);
      expect(errors).toEqual([]);
    } finally {
      await browser?.close();
    }
  });
});
