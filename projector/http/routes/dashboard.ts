// The dashboard's static files (projector/public): plain HTML, CSS and an ES module, no build step.
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { FastifyPluginAsync } from 'fastify';
import { errorJson, textOf } from '../responses.js';

// From the sources (projector/http/routes) and from the compiled package (dist/projector/http/routes).
const publicDir = [new URL('../../public/', import.meta.url), new URL('../../../../projector/public/', import.meta.url)]
  .map((u) => fileURLToPath(u))
  .find((d) => existsSync(`${d}index.html`));

const DASHBOARD =
  "The dashboard: plans with status and progress, searched by id, goal or label; a plan's item graph (top to bottom, wrapped to the panel's width), the timeline of attempts (intent → result → complete, durations, executor, take-overs marked), the digest with approve / reject for proposed plans, a form to answer an item that waits for a signal, failed items with *Retry item* and *Cancel plan* for a write token, a fork's lineage both ways, an agent run's turns and token totals, live updates. " +
  "An item opens from the graph or any table (`#<plan>/<item>`): its input, output or error, checkpoint and evidence (previews with their size, a download through the API for the whole payload), its attempts with their executors and take-overs, its events, and for an agent's model turn the text, tool calls and usage — while the turn runs, its text as the model writes it (the plan's live stream). " +
  "Per plan a time-travel slider (the plan as of any seq, the `--as-of` fold), a `verify` badge computed on request (hash chain, determinism, snapshots) and its parent / child plans linked both ways. " +
  'A **Problems** view (stalled plans and DLQ records with their cause and source offset, failed items, with *Retry item* / *Cancel plan* for a write token), an **Overview** (plans by status, items/s and failures over the last 5 minutes, every `<prefix>.*` consumer group with its members, their partitions and the lag per partition) and **Executors** (the live and stale executors with their tools, agents, partitions, host and version). ' +
  'The page is open; it asks for a token in its header (kept in the browser\'s localStorage, sent as a header, never in a URL), shows whose it is, and reads the API and its live stream with it.';

const assets: Record<string, { file: string; type: string; summary: string; description?: string }> = {
  '/': { file: 'index.html', type: 'text/html; charset=utf-8', summary: 'The dashboard', description: DASHBOARD },
  '/app.js': { file: 'app.js', type: 'text/javascript; charset=utf-8', summary: "The dashboard's script (an ES module, no build step): the plan list, search, routes and live updates" },
  ...Object.fromEntries(
    [
      ['core', 'shared DOM builders, state, token and API calls'],
      ['sse', 'server-sent events read with fetch (the token as a header)'],
      ['graph', "a plan's item graph"],
      ['detail', "a plan's view"],
      ['plan-parts', "the parts of a plan's view and its actions"],
      ['item', 'an opened item'],
      ['live-text', "a running item's live output"],
      ['views', 'the Problems, Overview and Executors pages'],
    ].map(([name, what]) => [`/${name}.js`, { file: `${name}.js`, type: 'text/javascript; charset=utf-8', summary: `A module of the dashboard's script: ${what}` }]),
  ),
  '/style.css': { file: 'style.css', type: 'text/css; charset=utf-8', summary: "The dashboard's style sheet" },
};

export const dashboardRoutes: FastifyPluginAsync = async (app) => {
  for (const [route, asset] of Object.entries(assets)) {
    const schema = {
      tags: ['dashboard'],
      summary: asset.summary,
      ...(asset.description ? { description: asset.description } : {}),
      response: { 200: textOf(`projector/public/${asset.file}`, asset.type.split(';')[0]!), 404: errorJson('The dashboard files are missing (`not_found`)') },
    };
    app.get(route, { schema }, async (_req, reply) => {
      if (!publicDir) return reply.code(404).send({ error: 'not_found', message: 'dashboard files are missing (projector/public)' });
      reply.header('content-type', asset.type).header('cache-control', 'no-cache');
      return readFileSync(`${publicDir}${asset.file}`);
    });
  }
};
