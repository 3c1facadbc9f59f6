/**
 * signatures/signHash and signatures/signDoc (operation mode S, or A with signPolling): the credential
 * token's hashes, exactly as authorized and in that order, signed by the pipeline, by the method the token
 * was authorized for. The token is used once (a conditional write) before the sign request is submitted.
 */
import {
  authorizedDigests,
  checkSignAlgo,
  conformanceLevelOf,
  credentialById,
  documentSigning,
  digestAlgorithmOf,
  digestOf,
  registeredClient,
  type CscDocumentSigning,
  type CscMethod,
  type CscSigning,
} from '@pipeline/core/csc';
import { json, type HttpEvent, type HttpResult } from '@pipeline/doors';
import { CscError } from './errors';
import { bearerToken, grantOfBearer, parseBody, randomSecret, seconds, tokenRefusal } from './request';
import { intakeRequest, notSigned, requestOf, signedAnswer } from './results';
import type { CscDoorDeps } from './types';

export async function sign(event: HttpEvent, deps: CscDoorDeps, method: CscMethod): Promise<HttpResult> {
  const accessToken = bearerToken(event);
  const grant = await grantOfBearer(event, deps, ['credential']);
  registeredClient(grant.clientId, deps.config.clients);
  const signing = grant.signing!;
  const body = parseBody(event);
  if (!signing.methods.includes(method)) {
    throw new CscError(
      'invalid_request',
      `this access token authorizes signatures/${signing.methods.join(' or ')}, not signatures/${method}`,
    );
  }
  const credential = credentialById(body.credentialID);
  if (credential.credentialID !== signing.credentialID) {
    throw new CscError('invalid_request', 'credentialID is not the authorized credential');
  }
  const mode = body.operationMode ?? 'S';
  if (mode !== 'S' && mode !== 'A') throw new CscError('invalid_request', 'operationMode must be S or A');
  const validity = validityPeriodSeconds(body, mode);
  const asked = method === 'signHash' ? [withV1Names(body)] : documentDigestEntries(body, signing);
  const authorized = authorizedDigests(signing);
  const hashes: string[] = [];
  // Each hash's CMS (signDoc), or none (signHash: raw).
  const formats: Array<CscDocumentSigning | undefined> = [];
  for (const entry of asked) {
    const digestAlgorithm = digestAlgorithmOf(entry.hashAlgorithmOID);
    checkSignAlgo(credential, entry.signAlgo, digestAlgorithm);
    const listed = Array.isArray(entry.hashes) ? (entry.hashes as unknown[]) : [];
    if (digestAlgorithm !== authorizedAlgorithm(signing)) {
      throw new CscError('invalid_request', 'hashAlgorithmOID is not the one this access token authorizes');
    }
    for (const h of listed) {
      hashes.push(digestOf(h, digestAlgorithm, 'hashes'));
      formats.push(method === 'signDoc' ? documentFormat(entry, signing) : undefined);
    }
  }
  if (hashes.length !== authorized.length || hashes.some((h, i) => h !== authorized[i])) {
    throw new CscError('invalid_request', 'hashes are not the hashes this access token authorizes');
  }
  const used = await deps.store.useToken(accessToken, seconds(deps));
  if (!used.ok) throw tokenRefusal(used);
  // What the token says at the moment of its use: the sign request the citizen's login must bind.
  const request = intakeRequest(used.grant, formats);
  // Mode A: the intake answers at once, the request accepted.
  const waitSeconds = mode === 'S' ? deps.config.signWaitSeconds : 0;
  const submitted = await deps.intake.submit({
    clientId: `csc:${grant.clientId}`,
    request,
    waitSeconds,
    ...(used.grant.signing?.binding.formatOpen ? { formatOpen: true } : {}),
    // A login's own credential: its key signs, certified at that login.
    ...(credential.credentialRequestId ? { credential: { use: credential.credentialRequestId } } : {}),
  });
  const returnValidationInfo = body.returnValidationInfo === true;
  if (mode === 'S') {
    return signedAnswer(submitted, method, authorized.length, returnValidationInfo) ?? notSigned();
  }
  // Operation mode A: accepted by the pipeline (else its refusal); the client polls with the responseID.
  requestOf(submitted);
  const responseID = randomSecret();
  await deps.store.putResponse(responseID, accessToken, {
    clientId: grant.clientId,
    requestId: request.requestId,
    method,
    count: authorized.length,
    returnValidationInfo,
    expiresAt: seconds(deps) + validity,
  });
  return json(200, { responseID });
}

/**
 * signHash's body with the CSC v1 names read as v2's (`hash` for `hashes`, `hashAlgo` for
 * `hashAlgorithmOID`), as pyHanko's CSC signer sends them; both names with different values is refused.
 * Its `SAD` is not read: the credential access token is the signature activation data.
 */
function withV1Names(body: Record<string, unknown>): Record<string, unknown> {
  const read = { ...body };
  for (const [v1, v2] of [
    ['hash', 'hashes'],
    ['hashAlgo', 'hashAlgorithmOID'],
  ] as const) {
    if (body[v1] === undefined) continue;
    if (body[v2] !== undefined && JSON.stringify(body[v2]) !== JSON.stringify(body[v1])) {
      throw new CscError('invalid_request', `${v1} and ${v2} differ`);
    }
    read[v2] = body[v1];
  }
  return read;
}

const DEFAULT_VALIDITY_SECONDS = 300;
const MAX_VALIDITY_SECONDS = 600;

/** CSC validity_period (milliseconds, mode A only): how long the outcome stays available; 10 min at most. */
function validityPeriodSeconds(body: Record<string, unknown>, mode: string): number {
  if (body.validity_period === undefined) return DEFAULT_VALIDITY_SECONDS;
  const ms = body.validity_period;
  if (
    mode !== 'A' ||
    typeof ms !== 'number' ||
    !Number.isInteger(ms) ||
    ms < 1000 ||
    ms > MAX_VALIDITY_SECONDS * 1000
  ) {
    throw new CscError(
      'invalid_request',
      'Invalid parameter validity_period: 1000 to 600000 ms, with operationMode A',
    );
  }
  return Math.ceil(ms / 1000);
}

/** The digest algorithm the token authorizes (one for all its hashes). */
function authorizedAlgorithm(signing: CscSigning): string {
  const { binding } = signing;
  return 'documents' in binding ? binding.documents[0].digestAlgorithm : binding.digestAlgorithm;
}

/** signDoc's `documentDigests` (CSC v2 11.11): entries of `hashes` with their `hashAlgorithmOID` and `signAlgo`. */
function documentDigestEntries(
  body: Record<string, unknown>,
  signing: CscSigning,
): Record<string, unknown>[] {
  if (body.documents !== undefined) {
    throw new CscError('invalid_request', 'documents are not accepted: send documentDigests');
  }
  const entries = body.documentDigests;
  if (!Array.isArray(entries) || entries.length === 0 || entries.length > authorizedDigests(signing).length) {
    throw new CscError('invalid_request', 'documentDigests is required');
  }
  return entries.map((entry: unknown) => (entry ?? {}) as Record<string, unknown>);
}

/**
 * The CMS a signDoc entry asks for: its `signature_format` and `conformance_level`, which must be the
 * authorized ones when the authorization bound them, and are the client's choice when its login approved
 * the hashes in any format.
 */
function documentFormat(entry: Record<string, unknown>, signing: CscSigning): CscDocumentSigning {
  const bound = signing.document;
  if (bound) {
    if (
      entry.signature_format !== bound.signatureFormat ||
      conformanceLevelOf(entry.conformance_level) !== bound.conformanceLevel
    ) {
      throw new CscError(
        'invalid_request',
        'signature_format and conformance_level must be the ones this access token authorizes',
      );
    }
    return bound;
  }
  const chosen = documentSigning(entry.signature_format, entry.conformance_level);
  if (!chosen) throw new CscError('invalid_request', 'signature_format and conformance_level are required');
  return chosen;
}
