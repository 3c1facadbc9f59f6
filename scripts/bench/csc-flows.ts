/**
 * The two signing flows the `csc` suite compares, one signature each, as their clients drive them:
 * today's API (the citizen's login at the local IdP for an ID token bound to the request, then POST
 * /v1/sign-requests?wait) and the CSC API v2 (oauth2/authorize with PKCE, the citizen's login and
 * approval at the local IdP, the service's callback, oauth2/token, signatures/signHash in operationMode
 * S). Each outcome has the latency of the signing call alone and of the whole flow.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { KeyType } from '@pipeline/core/shared';
import { loginAtLocalIdp } from '../client/src/oidc-login';
import { LOA2_CITIZEN_INDEX, TEST_CITIZENS } from '../local/idp/citizens';
import { sampleRequest, submitAndWait } from '../local/client';

export type FlowKind = 'api' | 'csc';

export interface FlowTarget {
  /** Today's API (`.../v1`) and its API key. */
  readonly apiUrl: string;
  readonly apiKey: string;
  readonly keyType: KeyType;
  /** The CSC API (`.../csc/v2`), its client and the redirect URI the local IdP sends back to. */
  readonly cscUrl: string;
  readonly cscClient: { readonly clientId: string; readonly secret: string; readonly redirectUri: string };
  readonly idpRedirectUri: string;
}

export interface FlowOutcome {
  readonly ok: boolean;
  readonly error?: string;
  /** The signing call alone: POST sign-requests?wait to the signed view, or signatures/signHash. */
  readonly signMs: number;
  /** The whole flow, logins included. */
  readonly flowMs: number;
}

export async function runFlow(kind: FlowKind, target: FlowTarget, i: number): Promise<FlowOutcome> {
  const started = performance.now();
  let signMs = NaN;
  try {
    if (kind === 'api') {
      const request = await sampleRequest(target.keyType, i);
      const signStart = performance.now();
      const { status, view } = await submitAndWait(target.apiUrl, target.apiKey, request.body);
      signMs = performance.now() - signStart;
      if (status !== 'signed') throw new Error(`ended ${status} ${view?.error?.code ?? ''}`);
    } else {
      const { token, hash } = await cscToken(target, i);
      const signStart = performance.now();
      const res = await fetch(`${target.cscUrl}/signatures/signHash`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify({
          credentialID: 'onetime-ec-p256',
          hashes: [Buffer.from(hash, 'base64url').toString('base64')],
          hashAlgorithmOID: '2.16.840.1.101.3.4.2.1',
          signAlgo: '1.2.840.10045.4.3.2',
          operationMode: 'S',
        }),
      });
      const body = (await res.json()) as { signatures?: string[]; error?: string };
      signMs = performance.now() - signStart;
      if (res.status !== 200 || body.signatures?.length !== 1)
        throw new Error(`signHash HTTP ${res.status} ${body.error ?? ''}`);
    }
    return { ok: true, signMs, flowMs: performance.now() - started };
  } catch (err) {
    return { ok: false, error: (err as Error).message, signMs, flowMs: performance.now() - started };
  }
}

/** authorize (PKCE, one hash) -> the IdP's login and approval -> the callback -> token. */
async function cscToken(target: FlowTarget, i: number): Promise<{ token: string; hash: string }> {
  const { clientId, secret, redirectUri } = target.cscClient;
  const verifier = randomBytes(32).toString('base64url');
  const hash = createHash('sha256').update(randomBytes(64)).digest('base64url');
  const url = new URL(`${target.cscUrl}/oauth2/authorize`);
  for (const [k, v] of Object.entries({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: redirectUri,
    scope: 'credential',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
    state: randomBytes(8).toString('hex'),
    credentialID: 'onetime-ec-p256',
    numSignatures: '1',
    hashes: hash,
    hashAlgorithmOID: '2.16.840.1.101.3.4.2.1',
  }))
    url.searchParams.set(k, v);
  const started = await fetch(url, { redirect: 'manual' });
  if (started.status !== 302) throw new Error(`authorize HTTP ${started.status}`);
  // The citizens the API's flow uses (the one logged in at too low a level of assurance left out).
  const citizens = TEST_CITIZENS.filter((_, j) => j !== LOA2_CITIZEN_INDEX);
  const citizen = citizens[i % citizens.length];
  const atCallback = await loginAtLocalIdp(
    new URL(started.headers.get('location')!),
    target.idpRedirectUri,
    citizen.personalIdentityNumber,
    'sign',
  );
  const back = await fetch(atCallback, { redirect: 'manual' });
  const code = new URL(back.headers.get('location') ?? 'x:/').searchParams.get('code');
  if (back.status !== 302 || !code) throw new Error(`callback HTTP ${back.status}: no code`);
  const res = await fetch(`${target.cscUrl}/oauth2/token`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(secret)}`).toString('base64')}`,
    },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      code_verifier: verifier,
      redirect_uri: redirectUri,
    }).toString(),
  });
  const token = ((await res.json()) as { access_token?: string }).access_token;
  if (res.status !== 200 || !token) throw new Error(`token HTTP ${res.status}`);
  return { token, hash };
}
