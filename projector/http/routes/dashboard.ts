// The dashboard's static files (projector/public): plain HTML, CSS and an ES module, no build step.
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { FastifyPluginAsync } from 'fastify';

// From the sources (projector/http/routes) and from the compiled package (dist/projector/http/routes).
const publicDir = [new URL('../../public/', import.meta.url), new URL('../../../../projector/public/', import.meta.url)]
  .map((u) => fileURLToPath(u))
  .find((d) => existsSync(`${d}index.html`));

const assets: Record<string, { file: string; type: string }> = {
  '/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/app.js': { file: 'app.js', type: 'text/javascript; charset=utf-8' },
  '/style.css': { file: 'style.css', type: 'text/css; charset=utf-8' },
};

export const dashboardRoutes: FastifyPluginAsync = async (app) => {
  for (const [route, asset] of Object.entries(assets)) {
    app.get(route, async (_req, reply) => {
      if (!publicDir) return reply.code(404).send({ error: 'not_found', message: 'dashboard files are missing (projector/public)' });
      reply.header('content-type', asset.type).header('cache-control', 'no-cache');
      return readFileSync(`${publicDir}${asset.file}`);
    });
  }
};
