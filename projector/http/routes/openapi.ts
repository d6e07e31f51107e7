// GET /api/openapi.json: the API's OpenAPI document, built from the routes' own schemas (openapi.ts). A
// `read` token, like every /api route: the document names no secrets, but the API is closed by default.
import type { FastifyPluginAsync } from 'fastify';
import { guardRoutes, type ScopeGuard } from '../auth.js';
import type { OpenApiDocument } from '../openapi.js';

export interface OpenApiOptions {
  readonly authorize: ScopeGuard;
  /** The document of the app's routes (built once, on the first request: every route is registered by then). */
  readonly document: () => OpenApiDocument;
}

export const openApiRoutes: FastifyPluginAsync<OpenApiOptions> = async (app, { authorize, document }) => {
  guardRoutes(app, authorize);
  let built: OpenApiDocument | undefined;
  const schema = {
    tags: ['operations'],
    summary: 'This document (OpenAPI 3.1)',
    description: "The API's OpenAPI 3.1 document, built from the routes' own schemas: every route with its scope, parameters, body and answers. docs/reference/http-api.md is generated from it.",
    response: { 200: { description: 'The OpenAPI document', content: { 'application/json': { schema: { type: 'object', description: 'An OpenAPI 3.1 document' } } } } },
  };
  app.get('/api/openapi.json', { schema }, async () => (built ??= document()));
};
