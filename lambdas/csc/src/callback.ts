/**
 * The identity provider's answer at the door's callback: the flow's state taken once, the login finished
 * and its assertion verified (the shared login machinery, @pipeline/doors), and the client sent back with
 * a code, or with the reason there is none.
 */
import {
  cscErrorFor,
  grantOf,
  nonceOf,
  registeredRedirect,
  requestOfFlow,
  type CscCredentialCreation,
} from '@pipeline/core/csc';
import { credentialDigest, expectedApproval } from '@pipeline/core/identity';
import { finishLogin, type HttpEvent, type HttpResult } from '@pipeline/doors';
import { CscError, intakeRefusal } from './errors';
import { redirectBack } from './authorize';
import { randomSecret, seconds } from './request';
import type { CscDoorDeps } from './types';

/**
 * The ID token is verified as the API verifies it (issuer, keys, audience, level of assurance, a fresh
 * login, the nonce of the bound sign request and, for a credential, the provider's approval of the sign
 * message for that digest). Only then does the client get a code.
 */
export async function callback(event: HttpEvent, deps: CscDoorDeps): Promise<HttpResult> {
  const q = event.queryStringParameters ?? {};
  const flow = typeof q.state === 'string' ? await deps.store.takeFlow(q.state, seconds(deps)) : undefined;
  if (!flow) throw new CscError('invalid_request', 'unknown, used or expired authorization (state)');
  // Parsed again from the client's parameters: the client and its redirect URI checked against the
  // registration (never redirect where the table says alone).
  const request = requestOfFlow(flow, deps.config.clients);
  registeredRedirect(request.clientId, request.redirectUri, deps.config.clients);
  const bound = request.signing ?? request.creation!;
  const back = (params: Record<string, string>): HttpResult =>
    redirectBack(request.redirectUri, request.state, params);
  const login = await finishLogin(deps.login, deps.verifier, q, {
    secret: flow.idpCodeVerifier,
    nonce: nonceOf(bound),
    options: { approval: expectedApproval(bound.binding) },
  });
  switch (login.kind) {
    case 'declined':
      return back({
        error: 'access_denied',
        error_description: 'the citizen did not log in or did not approve',
      });
    case 'unavailable':
      deps.logger.warn('identity provider unavailable for a CSC authorization', {
        errorName: (login.error as Error)?.name,
      });
      return back({ error: 'temporarily_unavailable', error_description: 'the identity provider failed' });
    case 'refused':
      // The code only: never the token or what it says about the citizen.
      deps.logger.warn('identity assertion refused', { code: login.error.code, cscClient: request.clientId });
      return back({ error: cscErrorFor(login.error.code), error_description: login.error.message });
    case 'signed-in': {
      if (request.creation) {
        const refusal = await createCredential(deps, request.clientId, request.creation, login.assertion);
        if (refusal) return back(refusal);
      }
      const code = randomSecret();
      const expiresAt = seconds(deps) + deps.config.lifetimes.codeSeconds;
      const idToken = request.signing ? login.assertion : undefined;
      await deps.store.putCode(code, grantOf(request, idToken, expiresAt));
      return back({ code });
    }
  }
}

/**
 * A service login's one-time credential, handed to the pipeline: a creation request with the login's
 * assertion, whose key it certifies for the citizen and keeps wrapped (credentials/info waits for it).
 * A refusal as the client's error, or undefined.
 */
async function createCredential(
  deps: CscDoorDeps,
  clientId: string,
  creation: CscCredentialCreation,
  assertion: string,
): Promise<Record<string, string> | undefined> {
  const { binding, signMessage } = creation;
  const submitted = await deps.intake.submit({
    clientId: `csc:${clientId}`,
    request: {
      requestId: binding.requestId,
      digest: credentialDigest(binding),
      digestAlgorithm: 'SHA-256',
      keyType: binding.keyType,
      signatureAlgorithm: binding.signatureAlgorithm,
      format: 'raw',
      signMessage,
      identityAssertion: assertion,
    },
    waitSeconds: 0,
    credential: { create: true },
  });
  if (submitted.kind !== 'refused') return undefined;
  deps.logger.warn('one-time credential refused by the pipeline', {
    code: submitted.error.code,
    cscClient: clientId,
  });
  return intakeRefusal(submitted.error).toJSON();
}
