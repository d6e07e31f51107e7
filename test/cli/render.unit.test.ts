import { describe, expect, it } from 'vitest';
import { auditRows } from '../../src/audit/timeline.js';
import { loadTools } from '../../src/cli/executor.js';
import { painter } from '../../src/cli/output.js';
import { renderAudit, renderPlan } from '../../src/cli/render.js';
import { history, logged } from '../audit/fixtures.js';

describe('CLI rendering', () => {
  const { events, state } = history();

  it('renders the plan for review: digest, then one aligned row per item', () => {
    const text = renderPlan(state, painter(false));
    expect(text).toContain(`digest  ${state.digest}   (approved)`);
    const rows = text.split('\n').filter((l) => /^ {2}(ITEM|lookup|pay) /.test(l));
    expect(rows).toHaveLength(3);
    expect(new Set(rows.map((r) => r.indexOf(r.trim().split(/\s+/)[1]!)))).toHaveProperty('size', 1);
    expect(text).not.toContain('\u001b[');
  });

  it('renders the audit timeline with elided keys and causations, one line per event', () => {
    const text = renderAudit('plan-1', auditRows(logged(events)), painter(false));
    const lines = text.split('\n');
    expect(lines).toHaveLength(events.length + 1);
    expect(lines[0]).toMatch(/^TIME \(UTC\)\s+SEQ\s+P\/OFFSET\s+EVENT\s+ACTOR\s+ITEM#ATT\s+IDEMPOTENCY KEY\s+OUTCOME\s+\+INTENT\s+CAUSATION$/);
    expect(lines.find((l) => l.includes('ResultCommitted') && l.includes('pay#1'))).toMatch(/ex-2\s+pay#1\s+…\/pay\/1\s+succeeded\s+6\.0s/);
  });

  it('colors only when asked', () => {
    expect(renderPlan(state, painter(true))).toContain('\u001b[32mcompleted\u001b[39m');
  });
});

describe('tools modules', () => {
  it('examples/tools.ts and demo/tools.ts load as executors load them', async () => {
    expect((await loadTools('examples/tools.ts')).map((t) => t.name)).toEqual(['echo', 'wait', 'http.get', 'http.post', 'plan.steps']);
    expect((await loadTools('demo/tools.ts')).map((t) => t.name)).toEqual(['orders.lookup', 'refunds.compute', 'payments.refund', 'customer.notify']);
  });
});
