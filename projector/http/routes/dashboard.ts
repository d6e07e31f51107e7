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
  "The dashboard: plans with status and progress, a plan's item graph, the timeline of attempts (intent → result → complete, durations, executor), the digest with approve / reject for proposed plans, a form to answer an item that waits for a signal, a fork's lineage both ways, an agent run's turns and token totals, live updates. " +
  "Per plan a time-travel slider (the plan as of any seq, the `--as-of` fold), a `verify` badge computed on request (hash chain, determinism, snapshots) and its parent / child plans linked both ways. " +
  'A **Problems** view (stalled plans and DLQ records with their cause and source offset, failed items, with *Retry item* / *Cancel plan* for a write token) and an **Overview** (plans by status, items/s and failures over the last 5 minutes, every `<prefix>.*` consumer group with its members, their partitions and the lag per partition). ' +
  'The page is open; it asks for a token in its header (kept in the browser\'s localStorage, sent as a header, never in a URL), shows whose it is, and reads the API and its live stream with it.';

const assets: Record<string, { file: string; type: string; summary: string; description?: string }> = {
  '/': { file: 'index.html', type: 'text/html; charset=utf-8', summary: 'The dashboard', description: DASHBOARD },
  '/app.js': { file: 'app.js', type: 'text/javascript; charset=utf-8', summary: "The dashboard's script (an ES module, no build step)" },
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
