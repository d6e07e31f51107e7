// Every TypeScript snippet (```ts / ```typescript) of README.md and docs/guides/*.md is typechecked against the
// package's public entries and, when it is a complete program, run against the real broker and registry, so a
// snippet that does not compile or does not run fails here.
//
// - A snippet imports the package by its name (`plan-ledger`, `plan-ledger/langgraph`): a tsconfig maps each
//   entry of package.json "exports" to its source (`./dist/index.d.ts` -> `./index.ts`), for tsc and tsx
//   alike, so the snippets see exactly what the package exports, without a build.
// - A snippet with no marker is a complete program: typechecked, then run with `node --import tsx` on a
//   fresh topic prefix of the test's stack, PAYMENTS_URL pointing at the demo's payment service
//   (demo/shop-service.ts, idempotent by key); it must exit 0 within 90 s.
// - A fragment by design says so in the line right before its fence:
//   `<!-- snippet: typecheck-only, preamble: <name> -->`. It is typechecked with the named preamble (below)
//   in front, which declares what the surrounding text has already introduced, and not run. Any other
//   `<!-- snippet: … -->` line, or an unknown preamble, fails the test.
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configToEnv } from '../../src/config.js';
import { ShopService } from '../../demo/shop-service.js';
import { testConfig } from '../support/helpers.js';

const ROOT = process.cwd();
const DIR = join(ROOT, 'test-results', 'snippets');

/** What a typecheck-only fragment may assume, by the name its marker gives. */
const PREAMBLES: Record<string, string> = {
  // A connected client, as the guide's earlier examples made it.
  ledger: `import type { Ledger } from 'plan-ledger';\ndeclare const ledger: Ledger;\n`,
  // A connected client and a plan's items, as the guide's earlier examples made them.
  'ledger-items': `import type { CreatePlanInput, Ledger } from 'plan-ledger';\ndeclare const ledger: Ledger;\ndeclare const items: CreatePlanInput['items'];\n`,
  // A connected client and a plan it runs.
  'ledger-plan': `import type { Ledger } from 'plan-ledger';\ndeclare const ledger: Ledger;\ndeclare const planId: string;\n`,
  // The tool's own helper: summarizes one page of the report.
  summarize: `import { defineTool } from 'plan-ledger';\ndeclare function summarize(page: number, o: { signal: AbortSignal }): Promise<string>;\n`,
  // The app's LangGraph graph, not compiled yet, and its input.
  'langgraph-builder': [
    `import { Annotation, END, START, StateGraph } from '@langchain/langgraph';`,
    `const State = Annotation.Root({ order: Annotation<string>, refunded: Annotation<boolean> });`,
    `const builder = new StateGraph(State).addNode('refund', () => ({ refunded: true })).addEdge(START, 'refund').addEdge('refund', END);`,
    `const input = { order: '42' };`,
    '',
  ].join('\n'),
  // The same graph compiled with the saver, as the guide's first example did.
  'langgraph-graph': [
    `import { Annotation, Command, END, START, StateGraph } from '@langchain/langgraph';`,
    `import type { Ledger } from 'plan-ledger';`,
    `import { LedgerSaver } from 'plan-ledger/langgraph';`,
    `declare const ledger: Ledger;`,
    `const State = Annotation.Root({ order: Annotation<string>, refunded: Annotation<boolean> });`,
    `const saver = new LedgerSaver({ ledger });`,
    `const graph = new StateGraph(State).addNode('refund', () => ({ refunded: true })).addEdge(START, 'refund').addEdge('refund', END).compile({ checkpointer: saver });`,
    `const input = { order: '42' };`,
    '',
  ].join('\n'),
};

interface Snippet {
  /** The n-th TypeScript block of its file, e.g. docs/guides/agents.md[1]. */
  where: string;
  /** Its fence's line, for messages. */
  line: number;
  file: string;
  code: string;
  preamble: string | null;
}

const MARKER = /^<!--\s*snippet:\s*typecheck-only,\s*preamble:\s*([\w-]+)\s*-->$/;

function snippetsOf(path: string): Snippet[] {
  const lines = readFileSync(join(ROOT, path), 'utf8').split('\n');
  const found: Snippet[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (/^<!--\s*snippet:/.test(line) && !MARKER.test(line)) throw new Error(`${path}:${i + 1}: unknown snippet marker ${line}`);
    if (MARKER.test(line) && !/^`{3,}(ts|typescript)\s*$/.test(lines[i + 1] ?? '')) throw new Error(`${path}:${i + 1}: a snippet marker must come right before a ts fence`);
    const fence = /^(`{3,})(\w+)?/.exec(line);
    if (!fence) continue;
    const end = lines.findIndex((l, j) => j > i && l.startsWith(fence[1]!) && l.trim() === fence[1]);
    if (end < 0) throw new Error(`${path}:${i + 1}: unclosed fence`);
    if (fence[2] === 'ts' || fence[2] === 'typescript') {
      const marker = i > 0 ? MARKER.exec(lines[i - 1]!) : null;
      const preamble = marker ? marker[1]! : null;
      if (preamble !== null && PREAMBLES[preamble] === undefined) throw new Error(`${path}:${i}: unknown preamble "${preamble}"`);
      const name = `${path.replace(/\.md$/, '').replace(/[/.]/g, '-')}-${found.length + 1}.ts`;
      found.push({ where: `${path}[${found.length + 1}]`, line: i + 1, file: join(DIR, name), code: lines.slice(i + 1, end).join('\n'), preamble });
    }
    i = end;
  }
  return found;
}

const docs = ['README.md', ...readdirSync(join(ROOT, 'docs/guides')).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/guides/${f}`)];

/** package.json "exports": each entry's types (dist/X.d.ts) mapped to its source (X.ts). */
function exportPaths(): Record<string, string[]> {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string; exports: Record<string, { types: string }> };
  const paths: Record<string, string[]> = {};
  for (const [entry, { types }] of Object.entries(pkg.exports)) {
    const source = types.replace(/^\.\/dist\//, '').replace(/\.d\.ts$/, '.ts');
    readFileSync(join(ROOT, source)); // the entry's source exists
    paths[entry === '.' ? pkg.name : `${pkg.name}/${entry.slice(2)}`] = [relative(DIR, join(ROOT, source))];
  }
  return paths;
}

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs: number): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    const timer = setTimeout(() => p.kill('SIGKILL'), timeoutMs);
    p.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    p.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    p.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe('the TypeScript snippets of README.md and docs/guides', () => {
  const snippets = docs.flatMap(snippetsOf);
  const programs = snippets.filter((s) => s.preamble === null);
  let payments: ShopService;

  beforeAll(async () => {
    rmSync(DIR, { recursive: true, force: true });
    mkdirSync(DIR, { recursive: true });
    for (const s of snippets) writeFileSync(s.file, `// ${s.where} (line ${s.line})\n${s.preamble === null ? '' : PREAMBLES[s.preamble]}${s.code}\nexport {};\n`);
    writeFileSync(
      join(DIR, 'tsconfig.json'),
      JSON.stringify({ extends: '../../tsconfig.json', compilerOptions: { noEmit: true, rootDir: '../..', paths: exportPaths() }, include: ['*.ts'] }, null, 2),
    );
    payments = await new ShopService().start();
  });
  afterAll(async () => {
    await payments?.stop();
  });

  it('finds them: 12 snippets, 4 complete programs and 8 fragments marked typecheck-only', () => {
    expect(snippets.map((s) => [s.where, s.preamble])).toEqual([
      ['README.md[1]', null],
      ['docs/guides/agents.md[1]', null],
      ['docs/guides/agents.md[2]', 'ledger-plan'],
      ['docs/guides/agents.md[3]', 'ledger'],
      ['docs/guides/langgraph.md[1]', 'langgraph-builder'],
      ['docs/guides/langgraph.md[2]', 'langgraph-graph'],
      ['docs/guides/langgraph.md[3]', 'langgraph-graph'],
      ['docs/guides/using-the-client.md[1]', null],
      ['docs/guides/using-the-client.md[2]', 'ledger-items'],
      ['docs/guides/waits-and-forks.md[1]', 'ledger'],
      ['docs/guides/writing-tools.md[1]', null],
      ['docs/guides/writing-tools.md[2]', 'summarize'],
    ]);
  });

  it('typechecks every one against the package entries', async () => {
    const r = await run(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(DIR, 'tsconfig.json'), '--pretty', 'false'], process.env, 170_000);
    // Errors name the snippet's file; the first line of each file names its place in the docs.
    expect(r.stdout + r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(readdirSync(DIR).filter((f) => f.endsWith('.ts'))).toHaveLength(snippets.length);
  }, 180_000);

  it('runs the 4 complete programs against the stack: each exits 0, and each that refunds does so once', async () => {
    const ran: string[] = [];
    for (const s of programs) {
      const before = payments.refunds.size;
      const config = testConfig();
      const env: NodeJS.ProcessEnv = { ...process.env, ...configToEnv(config), PAYMENTS_URL: payments.url, TSX_TSCONFIG_PATH: join(DIR, 'tsconfig.json'), NO_COLOR: '1' };
      const r = await run(process.execPath, ['--import', 'tsx', s.file], env, 90_000);
      expect({ where: s.where, code: r.code, stderr: r.code === 0 ? '' : r.stderr }).toEqual({ where: s.where, code: 0, stderr: '' });
      ran.push(`${s.where}: ${payments.refunds.size - before} refund(s)${r.stdout ? `, printed ${r.stdout.trim().split('\n').length} line(s)` : ''}`);
      if (s.where === 'docs/guides/agents.md[1]') expect(r.stdout).toBe('answer: Refunded 12.99 on order 42. (3 turns, 330 tokens)\n');
      if (s.where === 'README.md[1]') expect(r.stdout).toBe('true\n'); // verify(planId).ok
    }
    expect(ran).toEqual([
      'README.md[1]: 1 refund(s), printed 1 line(s)',
      'docs/guides/agents.md[1]: 1 refund(s), printed 1 line(s)',
      'docs/guides/using-the-client.md[1]: 1 refund(s)',
      'docs/guides/writing-tools.md[1]: 0 refund(s)',
    ]);
    // One refund per run, each keyed by its own plan's item: `planId/itemId/attempt`.
    expect([...payments.refunds.keys()].map((k) => k.replace(/^plan-[^/]+\//, ''))).toEqual(['refund/1', 'turn-2.call-0/1', 'refund/1']);
  }, 300_000);
});
