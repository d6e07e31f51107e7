// One item opened: its view (item-view.ts), and each of its payloads whole, as a download — references
// resolved from `<prefix>.plan-blobs` through the ledger client, decrypted when the projector holds the
// plan's key, secret fields "[secret]" as everywhere the API shows a plan.
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import type { Ledger } from '../../../src/client/index.js';
import { isLedgerError } from '../../../src/errors.js';
import { getItem } from '../../../src/plan/index.js';
import { redactJson, secretPaths, showEvents, showItem } from '../../../src/secrets/redact.js';
import { parseRef } from '../../../src/blobs/index.js';
import type { ProjectionService } from '../../projector.js';
import { guardRoutes, type ScopeGuard } from '../auth.js';
import { notFound } from '../errors.js';
import { itemView, payloadOf } from '../item-view.js';
import { errorJson, itemViewShape, json, textOf } from '../responses.js';
import { itemParams, payloadParams } from '../schemas.js';
import type { PayloadOpenerFor } from './plans-read.js';

export interface ItemDetailOptions {
  readonly service: ProjectionService;
  readonly authorize: ScopeGuard;
  readonly openerFor?: PayloadOpenerFor;
  /** Reads payloads stored by reference; resolved lazily on the first download of one. */
  readonly payloads: () => Promise<Pick<Ledger, 'readPayload'>>;
}

const noItem = (reply: FastifyReply, planId: string, itemId: string) => reply.code(404).send({ error: 'not_found', message: `plan ${planId} has no item ${itemId}` });

export const itemDetailRoutes: FastifyPluginAsync<ItemDetailOptions> = async (app, { service, authorize, openerFor, payloads }) => {
  const model = service.model;
  const opener = (planId: string) => (openerFor ? openerFor(planId) : Promise.resolve(undefined));
  guardRoutes(app, authorize);

  const viewSchema = {
    tags: ['plans'],
    summary: 'One item, opened',
    description:
      'The item without its payloads; each payload (input, output, an attempt\'s own output, the checkpoint, evidence) as a preview of at most 16 KiB with its size in bytes and its download route — stored by reference: its size and reference, no text; sealed with a key this projector does not hold: `sealed`, shown as stored. ' +
      "Its attempts from the events (intent → result → settled) each with `takeover` when a new owner re-invoked (`invoked`) or settled (`settled`) it after a take-over (who lost it, who took it, when), the newest 200 of its events, the items that depend on it, and for an agent's model turn (`agent:<name>` tool) the recorded text (at most 64 KiB here), tool calls (arguments at most 2 KiB each), usage and how the turn ended. " +
      'Shown as every plan read is: decrypted when the projector holds the plan\'s key, secret fields "[secret]".',
    params: itemParams,
    response: { 200: json('The item', itemViewShape), 404: errorJson('The plan is not known, or has no such item (`not_found`)') },
  };
  app.get<{ Params: { id: string; itemId: string } }>('/api/plans/:id/items/:itemId', { schema: viewSchema }, async (req, reply) => {
    const { id: planId, itemId } = req.params;
    const v = await model.read(planId); // a cold plan: its archived snapshot, read back
    if (!v) return notFound(reply, planId);
    const raw = v.state ? getItem(v.state, itemId) : undefined;
    if (!v.state || !raw) return noItem(reply, planId, itemId);
    const open = await opener(planId);
    const shown = { ...v.state, items: { ...v.state.items, [itemId]: showItem(raw, open) } };
    const events = showEvents(await model.events(planId), v.state, open);
    return itemView(shown, itemId, events);
  });

  const payloadSchema = {
    tags: ['plans'],
    summary: "One of an item's payloads, whole",
    description:
      '`input`, `output`, `checkpoint`, `attempt-<n>` (that attempt\'s own output) or `evidence-<i>`, as a JSON download (`content-disposition: attachment`). A payload stored by reference is read from `<prefix>.plan-blobs` and checked against its sha256; ' +
      "decrypted when the projector holds the plan's key (else served as stored, sealed), secret fields \"[secret]\". A missing or erased blob is a 404; content that does not match its reference, a 502.",
    params: payloadParams,
    response: {
      200: textOf('The payload (JSON text)', 'application/json'),
      404: errorJson('The plan, the item or the payload is not known, or its blob is gone (`not_found`)'),
      502: errorJson('The stored blob does not match its reference, or could not be read (`bad_gateway`)'),
    },
  };
  app.get<{ Params: { id: string; itemId: string; name: string } }>('/api/plans/:id/items/:itemId/payloads/:name', { schema: payloadSchema }, async (req, reply) => {
    const { id: planId, itemId, name } = req.params;
    const v = await model.read(planId);
    if (!v) return notFound(reply, planId);
    const item = v.state ? getItem(v.state, itemId) : undefined;
    if (!item) return noItem(reply, planId, itemId);
    const stored = payloadOf(item, name);
    if (stored === undefined) return reply.code(404).send({ error: 'not_found', message: `item ${itemId} of plan ${planId} has no payload ${name}` });
    let text: string;
    try {
      if (parseRef(stored)) text = await (await payloads()).readPayload(planId, stored);
      else {
        const open = await opener(planId);
        text = open ? open(stored) : stored;
      }
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e);
      if (isLedgerError(e, 'NOT_FOUND')) return reply.code(404).send({ error: 'not_found', message: `payload ${name} of ${planId}/${itemId}: ${message}` });
      req.log.warn({ err: message, planId, itemId, name }, 'payload read failed');
      return reply.code(502).send({ error: 'bad_gateway', message: `payload ${name} of ${planId}/${itemId} could not be read: ${message}` });
    }
    return reply
      .header('content-type', 'application/json; charset=utf-8')
      .header('content-disposition', `attachment; filename="${`${planId}-${itemId}-${name}`.replace(/[^A-Za-z0-9._-]/g, '_')}.json"`)
      .header('cache-control', 'no-store')
      .send(redactJson(text, secretPaths(item)));
  });
};
