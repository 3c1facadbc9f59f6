/**
 * The local OpenID Provider (oidc-provider) as a process of its own, on loopback only:
 *
 *   node --import tsx scripts/local/idp/main.ts
 *
 * Prints exactly `listening <port>` on stdout once it answers (everything else goes to stderr), and
 * stops on SIGTERM or SIGINT. The issuer is http://127.0.0.1:<port>; discovery at
 * /.well-known/openid-configuration, keys at /jwks.
 *
 * Environment:
 *   IDP_PORT                    TCP port on 127.0.0.1; 0 (default) picks a free one
 *   IDP_KEYS_FILE               private JWK Set of the signing keys, made (0600) when missing;
 *                               default .local/idp/jwks.json under the repository root
 *   IDP_ID_TOKEN_TTL_SECONDS    lifetime of ID tokens, default 300
 *   IDP_CLIENT_KEYS_DIR         the signing clients' signRequest keys (made when missing), default
 *                               .local/idp/client-keys
 *   IDP_EXIT_ON_STDIN_CLOSE     1: also stop when stdin closes (the parent went away; set by process.ts)
 *   DEBUG=oidc-provider:*       oidc-provider's own debug output (to stderr)
 * The host is always 127.0.0.1 (not configurable: this IdP is for local runs and tests only).
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import type { JWK } from 'jose';
import { IDP_CLIENT_KEYS_DIR, localClientKey } from '../client-keys';
import { SIGNING_CLIENT_IDS } from './clients';
import { handleInteraction } from './interactions';
import { DEFAULT_KEYS_FILE, loadOrCreateSigningKeys } from './keys';
import { INTERACTION_PREFIX, createProvider, type IdpOptions } from './provider';
import { ApprovalStore, RequestObjectSignRequests } from './sign-request';

const HOST = '127.0.0.1';

function intFromEnv(name: string, fallback: number, min: number, max: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new Error(`${name} must be an integer from ${min} to ${max}, not ${JSON.stringify(raw)}`);
  }
  return value;
}

const log = (line: string): void => {
  process.stderr.write(`${line}\n`);
};

function listen(server: Server, port: number): Promise<number> {
  return new Promise((done, fail) => {
    server.once('error', fail);
    server.listen(port, HOST, () => done((server.address() as AddressInfo).port));
  });
}

async function main(): Promise<void> {
  const port = intFromEnv('IDP_PORT', 0, 0, 65535);
  const idTokenTtlSeconds = intFromEnv('IDP_ID_TOKEN_TTL_SECONDS', 300, 1, 86_400);
  const keysFile = resolve(process.env.IDP_KEYS_FILE || DEFAULT_KEYS_FILE);
  const jwks = await loadOrCreateSigningKeys(keysFile);

  // The issuer names the port, so the socket is bound first (answering 503 until the provider exists).
  const notYet: RequestListener = (_req, res) => res.writeHead(503, { 'retry-after': '1' }).end();
  // Room for an authorization request whose signRequest carries a composed message of several documents.
  const server = createServer({ maxHeaderSize: 96 * 1024 }, notYet);
  const bound = await listen(server, port);
  const issuer = `http://${HOST}:${bound}`;
  const clientKeysDir = resolve(process.env.IDP_CLIENT_KEYS_DIR || IDP_CLIENT_KEYS_DIR);
  const signClients = new Map(
    SIGNING_CLIENT_IDS.map((clientId) => {
      const { jwksFile } = localClientKey(clientId, clientKeysDir);
      return [clientId, JSON.parse(readFileSync(jwksFile, 'utf8')) as { keys: JWK[] }] as const;
    }),
  );
  const options: IdpOptions = {
    issuer,
    jwks,
    idTokenTtlSeconds,
    cookieKeys: [randomBytes(32).toString('base64url')],
    signClients,
    approvals: new ApprovalStore(),
    requestObjectSignRequests: new RequestObjectSignRequests(),
  };
  const provider = createProvider(options, log);
  const callback = provider.callback();
  server.removeListener('request', notYet);
  server.on('request', (req, res) => {
    if (req.url?.startsWith(INTERACTION_PREFIX)) void handleInteraction(provider, options, req, res, log);
    else callback(req, res);
  });

  log(`local IdP ${issuer} (keys ${keysFile}: ${jwks.keys.map((k) => `${k.kty} ${k.kid}`).join(', ')})`);
  process.stdout.write(`listening ${bound}\n`);

  let stopping = false;
  const shutdown = (): void => {
    if (stopping) return;
    stopping = true;
    server.close(() => process.exit(0));
    server.closeAllConnections();
    setTimeout(() => process.exit(0), 3_000).unref();
  };
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
  if (process.env.IDP_EXIT_ON_STDIN_CLOSE === '1') {
    process.stdin.on('end', shutdown);
    process.stdin.on('close', shutdown);
    process.stdin.resume();
  }
}

main().catch((err: Error) => {
  log(`local IdP failed to start: ${err.name}: ${err.message}`);
  process.exit(1);
});
