/**
 * The citizen's login at an identity provider, as every door that logs citizens in drives it: begin
 * (where to send the citizen, and a secret the door keeps with its flow's state), then finish at the
 * callback (the provider's answer, exchanged for an identity assertion and verified as the API and the CA
 * verify it). The provider's protocol is behind IdentityProviderLogin: OpenID Connect (the CSC door)
 * today; a SAML login (the DSS-Ext door) is another implementation of the same two steps.
 */
import { randomBytes } from 'node:crypto';
import {
  AssertionError,
  type AssertionVerifier,
  type SignMessage,
  type VerifyOptions,
} from '@pipeline/core/identity';

/** What the citizen approves at the provider with the login: the data to be signed and the message. */
export interface SignatureToApprove {
  readonly tbsData: string;
  readonly signMessage: SignMessage;
}

/** The query (or form) parameters of the provider's answer at the door's callback. */
export type ProviderAnswer = Readonly<Record<string, string | undefined>>;

/** One identity provider's login protocol (the port; the handlers wire an implementation). */
export interface IdentityProviderLogin {
  /**
   * Where to send the citizen for the flow `state`, asking for an assertion bound to `nonce`, and the
   * secret (OIDC: the PKCE verifier) the door keeps in the flow's state for `finish`.
   */
  begin(request: {
    readonly state: string;
    readonly nonce: string;
    readonly signature?: SignatureToApprove;
  }): Promise<{ readonly location: string; readonly secret: string }>;
  /**
   * The identity assertion the answer stands for (unverified), or undefined when the citizen did not log
   * in or did not approve. Throws when the provider fails.
   */
  finish(answer: ProviderAnswer, secret: string): Promise<string | undefined>;
}

/** A login's end: the verified assertion, or why there is none. */
export type LoginOutcome =
  | { readonly kind: 'signed-in'; readonly assertion: string }
  | { readonly kind: 'declined' }
  /** The provider failed (its token endpoint, its keys): the citizen may try again later. */
  | { readonly kind: 'unavailable'; readonly error: unknown }
  /** The assertion is not acceptable (its code says why; never what it says about the citizen). */
  | { readonly kind: 'refused'; readonly error: AssertionError };

/** A flow's state id (also the provider's `state`): 256 random bits, unguessable. */
export function newFlowId(): string {
  return randomBytes(32).toString('base64url');
}

/** Starts a login: the flow's id, where to send the citizen, and the secret to keep with the flow. */
export async function beginLogin(
  login: IdentityProviderLogin,
  request: { readonly nonce: string; readonly signature?: SignatureToApprove },
): Promise<{ readonly flowId: string; readonly location: string; readonly secret: string }> {
  const flowId = newFlowId();
  const { location, secret } = await login.begin({ state: flowId, ...request });
  return { flowId, location, secret };
}

/**
 * Finishes a login at the callback: the provider's answer exchanged for an assertion, which is verified
 * against the flow's nonce (and, with `options.approval`, the provider's approval of what is signed).
 */
export async function finishLogin(
  login: IdentityProviderLogin,
  verifier: AssertionVerifier,
  answer: ProviderAnswer,
  flow: { readonly secret: string; readonly nonce: string; readonly options?: VerifyOptions },
): Promise<LoginOutcome> {
  try {
    const assertion = await login.finish(answer, flow.secret);
    if (assertion === undefined) return { kind: 'declined' };
    await verifier.verify(assertion, flow.nonce, flow.options);
    return { kind: 'signed-in', assertion };
  } catch (error) {
    if (error instanceof AssertionError) return { kind: 'refused', error };
    return { kind: 'unavailable', error };
  }
}
