/**
 * The Signature Activation Data (ELN-0613 §3.2): a JWT the identity provider signs, as the assertion's
 * attribute urn:oid:1.2.752.201.3.12, stating that this person agreed to sign this many documents of this
 * sign request at this service. Every check of §3.2.3 is made; a failed one is a refusal.
 */
import { importX509, jwtVerify, decodeProtectedHeader } from 'jose';
import { AssertionError, type SamlAssertionFacts } from '@pipeline/core/identity';
import type { IdentityProviderEntry } from './metadata';

export const SAD_ATTRIBUTE = 'urn:oid:1.2.752.201.3.12';

export interface SadExpectations {
  /** Our SP entityID: the SADRequest's RequesterID. */
  readonly audience: string;
  /** The SADRequest's ID. */
  readonly sadRequestId: string;
  /** The DSS RequestID (SignRequestID). */
  readonly signRequestId: string;
  /** The number of documents (sign tasks). */
  readonly docCount: number;
  /** The attribute that names the signer (sub's source), e.g. personalIdentityNumber. */
  readonly userIdAttribute: string;
  readonly now: number;
  readonly clockSkewMs: number;
}

const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'ES256', 'ES384'];

/** Verifies the assertion's SAD against its identity provider's keys and the request. */
export async function verifySad(
  facts: SamlAssertionFacts,
  idp: IdentityProviderEntry,
  expected: SadExpectations,
): Promise<void> {
  const values = facts.attributes.filter((a) => a.name === SAD_ATTRIBUTE).flatMap((a) => a.values);
  if (values.length !== 1 || values[0] === undefined) throw sadError('the assertion carries no single SAD');
  const jwt = values[0];
  let alg: string;
  try {
    alg = decodeProtectedHeader(jwt).alg ?? '';
  } catch {
    throw sadError('the SAD is not a JWS');
  }
  if (!ALGORITHMS.includes(alg)) throw sadError("the SAD's algorithm is not allowed");
  let payload: Record<string, unknown> | undefined;
  for (const certificate of idp.signingCertificates) {
    try {
      const key = await importX509(certificate.toString(), alg);
      payload = (
        await jwtVerify(jwt, key, {
          issuer: facts.issuer,
          audience: expected.audience,
          currentDate: new Date(expected.now),
          clockTolerance: Math.ceil(expected.clockSkewMs / 1000),
          requiredClaims: ['iat', 'exp', 'jti', 'sub'],
        })
      ).payload;
      break;
    } catch {
      // another certificate of the identity provider may have signed it
    }
  }
  if (payload === undefined) throw sadError('the SAD does not verify, or its iss, aud or time is wrong');
  const ext = payload.seElnSadext as Record<string, unknown> | undefined;
  const userId = facts.attributes.find((a) => a.name === expected.userIdAttribute)?.values[0];
  const checks: ReadonlyArray<readonly [boolean, string]> = [
    [ext !== undefined && typeof ext === 'object', 'the SAD has no seElnSadext'],
    [ext?.ver === '1.0', 'the SAD version is not 1.0'],
    [ext?.irt === expected.sadRequestId, 'the SAD answers another SADRequest'],
    [ext?.attr === expected.userIdAttribute, 'the SAD names the signer by another attribute'],
    [userId !== undefined && payload.sub === userId, 'the SAD is for another person'],
    [ext?.loa === facts.authnContextClassRef, 'the SAD states another level of assurance'],
    [ext?.reqid === expected.signRequestId, 'the SAD is for another sign request'],
    [ext?.docs === expected.docCount, 'the SAD is for another number of documents'],
  ];
  const failed = checks.find(([ok]) => !ok);
  if (failed !== undefined) throw sadError(failed[1]);
}

function sadError(message: string): AssertionError {
  return new AssertionError('ASSERTION_CLAIMS_INVALID', message);
}
