import { readFile } from 'node:fs/promises';
import type { JwksSource } from '@pipeline/config';
import type { SsmParameterStore } from '@pipeline/adapters/parameters';
import type { JwksFetcher } from './jwks';

/** A JWKS document is a few kB; anything much larger is not one. */
const MAX_JWKS_BYTES = 64 * 1024;
const FETCH_TIMEOUT_MS = 3000;

/** GET a JSON document over HTTP(S): no redirects, bounded size and time. */
export async function fetchJson(url: string): Promise<unknown> {
  const res = await fetch(url, {
    redirect: 'error',
    headers: { accept: 'application/json' },
    signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
  });
  if (!res.ok) throw new Error(`HTTP ${res.status}`);
  const text = await res.text();
  if (Buffer.byteLength(text) > MAX_JWKS_BYTES) throw new Error('document too large');
  return JSON.parse(text) as unknown;
}

/**
 * Where a process reads an issuer's keys: the issuer's jwks_uri (where the function may reach it: the
 * local runner, a deployment with egress), an SSM parameter kept current by the scheduled refresher (AWS
 * functions in isolated subnets), or a file (operators, tests).
 */
export function jwksFetcher(source: JwksSource, parameters: () => SsmParameterStore): JwksFetcher {
  switch (source.kind) {
    case 'url':
      return () => fetchJson(source.url);
    case 'ssm':
      return async () => JSON.parse((await parameters().get(source.parameter)) ?? '') as unknown;
    case 'file':
      return async () => JSON.parse(await readFile(source.path, 'utf8')) as unknown;
  }
}
