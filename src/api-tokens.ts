// Who may call the API: bearer tokens with a principal and scopes (`read`, `write`), compiled once at
// start-up into a frozen set. Tokens are compared as SHA-256 digests with timingSafeEqual, against every
// configured token (no early exit), so neither a token's length nor its position leaks through timing.
// Shared by the two servers that take the API's tokens: the projector's HTTP API (projector/http/auth.ts
// adds its Fastify hooks) and the CLI's MCP server over HTTP (cli/mcp-action.ts).
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { LedgerError } from './errors.js';

export const Scopes = { read: 'read', write: 'write' } as const;
export type Scope = (typeof Scopes)[keyof typeof Scopes];

/** One API token as configured: the bearer secret, who holds it, what it may do. */
export interface ApiToken {
  readonly token: string;
  /** Recorded as the actor (`by`, approver) of every command sent with this token. */
  readonly principal: string;
  readonly scopes: readonly Scope[];
}

/** Who a request's token belongs to (the secret itself is not kept on the request). */
export interface Principal {
  readonly name: string;
  readonly scopes: readonly Scope[];
}

/** The legacy single token (PLAN_LEDGER_API_TOKEN / `apiToken`) is a read+write token of this principal. */
export const LEGACY_PRINCIPAL = 'api-token';

const tokenSchema = z.object({
  token: z.string().min(16, 'at least 16 characters').max(4096),
  principal: z.string().regex(/^[^\s\p{Cc}]{1,256}$/u, '1-256 characters, no spaces or control characters'),
  scopes: z.array(z.enum(['read', 'write'])).min(1),
}).strict();

/**
 * Parses a tokens file: a JSON array of `{token, principal, scopes}`, or one such JSON object per line
 * (blank lines and `#` comments skipped). A bad entry fails with its place and the reason.
 *
 * @example
 * // tokens.jsonl
 * {"token": "3f9c…", "principal": "alice", "scopes": ["read", "write"]}
 * {"token": "a71e…", "principal": "grafana", "scopes": ["read"]}
 */
export function parseTokens(text: string, source: string): ApiToken[] {
  const trimmed = text.trim();
  let entries: Array<{ value: unknown; where: string }>;
  try {
    entries = trimmed.startsWith('[')
      ? (JSON.parse(trimmed) as unknown[]).map((value, i) => ({ value, where: `${source}[${i}]` }))
      : text.split('\n').flatMap((line, i) => (line.trim() === '' || line.trim().startsWith('#') ? [] : [{ value: JSON.parse(line) as unknown, where: `${source}:${i + 1}` }]));
  } catch (e) {
    throw new LedgerError('VALIDATION', `${source}: not JSON (${(e as Error).message}); expected a JSON array or one {"token","principal","scopes"} object per line`, { field: source });
  }
  return entries.map(({ value, where }) => {
    const r = tokenSchema.safeParse(value);
    if (!r.success) {
      const issue = r.error.issues[0]!;
      const field = [where, ...issue.path.map(String)].join('.');
      throw new LedgerError('VALIDATION', `${field}: ${issue.message}`, { field });
    }
    return r.data;
  });
}

export interface AuthInput {
  /** The single legacy token: read and write, principal `api-token`. */
  readonly apiToken?: string | null;
  readonly apiTokens?: readonly ApiToken[];
  /** Path of a tokens file (see {@link parseTokens}). */
  readonly tokensFile?: string;
  /** Read routes without a token (local development only). Default false. */
  readonly openReads?: boolean;
}

export interface TokenSet {
  readonly size: number;
  readonly openReads: boolean;
  /** The token's principal, or null when no configured token matches. */
  lookup(given: string): Principal | null;
}

const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();

/** Compiles every configured token into one frozen set; duplicates and bad entries fail start-up. */
export function compileTokens(input: AuthInput): TokenSet {
  const all: ApiToken[] = [];
  if (input.apiToken) all.push({ token: input.apiToken, principal: LEGACY_PRINCIPAL, scopes: ['read', 'write'] });
  if (input.apiTokens) all.push(...parseTokens(JSON.stringify(input.apiTokens), 'apiTokens'));
  if (input.tokensFile) {
    let text: string;
    try {
      text = readFileSync(input.tokensFile, 'utf8');
    } catch (e) {
      throw new LedgerError('VALIDATION', `PLAN_LEDGER_API_TOKENS_FILE: cannot read ${input.tokensFile} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`, { field: 'PLAN_LEDGER_API_TOKENS_FILE' });
    }
    all.push(...parseTokens(text, 'PLAN_LEDGER_API_TOKENS_FILE'));
  }
  const seen = new Set<string>();
  const entries = all.map((t) => {
    const d = digest(t.token).toString('hex');
    if (seen.has(d)) throw new LedgerError('VALIDATION', `API tokens: the token of principal "${t.principal}" is configured twice`, { field: 'apiTokens' });
    seen.add(d);
    return Object.freeze({ digest: digest(t.token), principal: Object.freeze({ name: t.principal, scopes: Object.freeze([...new Set(t.scopes)]) }) });
  });
  return Object.freeze({
    size: entries.length,
    openReads: input.openReads ?? false,
    lookup(given: string) {
      const d = digest(given);
      let found: Principal | null = null;
      for (const e of entries) if (timingSafeEqual(d, e.digest) && found === null) found = e.principal;
      return found;
    },
  });
}

/** The bearer token of an Authorization header (never the URL, which ends up in logs); null without one. */
export function bearerToken(header: string | string[] | undefined): string | null {
  const m = typeof header === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
  return m ? m[1]! : null;
}
