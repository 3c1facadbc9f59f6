/**
 * credentials/list and credentials/info: the service's credential types (one per key type and scheme),
 * and first the one-time credential the service login created for its citizen, with its certificate.
 */
import { X509Certificate } from 'node:crypto';
import {
  CSC_CREDENTIALS,
  credentialById,
  credentialInfo,
  type CredentialCertificate,
  type CscGrant,
} from '@pipeline/core/csc';
import { json, type HttpEvent, type HttpResult } from '@pipeline/doors';
import { CscError } from './errors';
import { grantOfBearer, parseBody } from './request';
import { requestOf } from './results';
import type { CscDoorDeps } from './types';

/**
 * The citizen's credentials: the one-time credential the service login created (every service login
 * creates one); the types (CSC_CREDENTIALS) for a grant without one. Each credential's info with
 * `credentialInfo` (CSC v2 11.4).
 */
export async function credentialsList(event: HttpEvent, deps: CscDoorDeps): Promise<HttpResult> {
  const grant = await grantOfBearer(event, deps, ['service']);
  const body = parseBody(event);
  const certificates = certificatesOf(body);
  const ids = grant.createdCredential
    ? [grant.createdCredential]
    : CSC_CREDENTIALS.map((c) => c.credentialID);
  const infos =
    body.credentialInfo === true
      ? await Promise.all(
          ids.map(async (credentialID) => ({
            credentialID,
            ...(await infoOf(deps, grant, credentialID, certificates)),
          })),
        )
      : undefined;
  return json(200, { credentialIDs: ids, ...(infos ? { credentialInfos: infos } : {}) });
}

export async function credentialsInfo(event: HttpEvent, deps: CscDoorDeps): Promise<HttpResult> {
  const grant = await grantOfBearer(event, deps, ['service', 'credential']);
  const body = parseBody(event);
  return json(200, await infoOf(deps, grant, body.credentialID, certificatesOf(body)));
}

type CertificatesAsked = 'none' | 'single' | 'chain';

/** CSC `certificates`: none, single (the default) or chain. */
function certificatesOf(body: Record<string, unknown>): CertificatesAsked {
  const asked = body.certificates ?? 'single';
  if (asked !== 'none' && asked !== 'single' && asked !== 'chain') {
    throw new CscError('invalid_request', 'Invalid parameter certificates: none, single or chain');
  }
  return asked;
}

/**
 * A credential's info: a type's as it is; a login's own credential only for the grant it belongs to (the
 * service token of the login that created it, or a credential token for it), with the certificate the
 * pipeline issued for it, once issued (read through the intake, as the client's request).
 */
async function infoOf(
  deps: CscDoorDeps,
  grant: CscGrant,
  credentialID: unknown,
  certificates: CertificatesAsked,
): Promise<Record<string, unknown>> {
  const credential = credentialById(credentialID);
  const requestId = credential.credentialRequestId;
  if (requestId === undefined) return credentialInfo(credential);
  const mine =
    grant.createdCredential === credential.credentialID ||
    grant.signing?.credentialID === credential.credentialID;
  if (!mine) throw new CscError('invalid_request', 'Invalid parameter credentialID');
  const read = await deps.intake.read({
    clientId: `csc:${grant.clientId}`,
    id: requestId,
    waitSeconds: deps.config.signWaitSeconds,
  });
  const request = requestOf(read);
  const certificate = request?.certificate as string | undefined;
  if (!certificate) {
    throw new CscError('temporarily_unavailable', 'the credential is not certified yet: retry');
  }
  const pems = [certificate, ...((request?.chain as string[] | undefined) ?? [])];
  const shown = certificates === 'none' ? [] : certificates === 'single' ? pems.slice(0, 1) : pems;
  // The DNs, serial and validity whatever certInfo says: eudi-lib-jvm-rqes-csc-kt parses the DNs always.
  return credentialInfo(credential, undefined, {
    certificates: shown.map(derBase64),
    info: certificateInfo(certificate),
  });
}

const derBase64 = (pem: string): string => new X509Certificate(pem).raw.toString('base64');

/** CSC v2 11.5 certInfo's fields: DNs in RFC 4514 order, serial in hex, validity as GeneralizedTime. */
function certificateInfo(pem: string): CredentialCertificate['info'] {
  const cert = new X509Certificate(pem);
  const dn = (name: string): string => name.split('\n').reverse().join(',');
  const generalized = (date: string): string =>
    new Date(date)
      .toISOString()
      .replace(/[-:T]/g, '')
      .replace(/\.\d{3}Z$/, 'Z');
  return {
    issuerDN: dn(cert.issuer),
    serialNumber: cert.serialNumber.toLowerCase(),
    subjectDN: dn(cert.subject),
    validFrom: generalized(cert.validFrom),
    validTo: generalized(cert.validTo),
  };
}
