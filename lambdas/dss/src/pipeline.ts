/**
 * What a DSS-Ext SignRequest asks of the pipeline: one request (its id derived from the SignRequester and
 * RequestID, so a resent SignRequest is the same request), the key type and scheme of the requested
 * algorithm, and one `dss-task` document per sign task. The door submits exactly this and the CA's evidence
 * verifier recomputes it from the SignRequest it verified: the two must agree on the binding.
 */
import { createHash } from 'node:crypto';
import type { DigestAlgorithm, KeyType, SignatureAlgorithm } from '@pipeline/core/shared';
import { signTaskDigest, type SignTaskData } from '@pipeline/core/signing';
import type { ManifestDocument } from '@pipeline/core/identity';
import { DssRefusal } from './errors';
import type { SignRequest } from './types';

export interface PipelineRequest {
  readonly requestId: string;
  readonly keyType: KeyType;
  readonly signatureAlgorithm: SignatureAlgorithm;
  /** The tasks' digest algorithm: the requested signature algorithm's. */
  readonly digestAlgorithm: DigestAlgorithm;
  readonly tasks: readonly SignTaskData[];
}

type Scheme = { keyType: KeyType; signatureAlgorithm: SignatureAlgorithm; digestAlgorithm: DigestAlgorithm };

/** XML signature URI → the pool's key type and the scheme (RSA: the pool's RSA-2048). */
const SCHEMES: Readonly<Record<string, Scheme>> = {
  'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256': rsa('RSASSA-PKCS1-v1_5', 'SHA-256'),
  'http://www.w3.org/2001/04/xmldsig-more#rsa-sha384': rsa('RSASSA-PKCS1-v1_5', 'SHA-384'),
  'http://www.w3.org/2001/04/xmldsig-more#rsa-sha512': rsa('RSASSA-PKCS1-v1_5', 'SHA-512'),
  'http://www.w3.org/2007/05/xmldsig-more#sha256-rsa-MGF1': rsa('RSASSA-PSS', 'SHA-256'),
  'http://www.w3.org/2007/05/xmldsig-more#sha384-rsa-MGF1': rsa('RSASSA-PSS', 'SHA-384'),
  'http://www.w3.org/2007/05/xmldsig-more#sha512-rsa-MGF1': rsa('RSASSA-PSS', 'SHA-512'),
  'http://www.w3.org/2001/04/xmldsig-more#ecdsa-sha256': ec('EC-P256', 'SHA-256'),
  'http://www.w3.org/2001/04/xmldsig-more#ecdsa-sha384': ec('EC-P384', 'SHA-384'),
  'http://www.w3.org/2001/04/xmldsig-more#ecdsa-sha512': ec('EC-P384', 'SHA-512'),
};

function rsa(signatureAlgorithm: SignatureAlgorithm, digestAlgorithm: DigestAlgorithm): Scheme {
  return { keyType: 'RSA-2048', signatureAlgorithm, digestAlgorithm };
}
function ec(keyType: KeyType, digestAlgorithm: DigestAlgorithm): Scheme {
  return { keyType, signatureAlgorithm: 'ECDSA', digestAlgorithm };
}

/** The certificate fields a RequestedCertAttribute can fill (the certificate profile's subject). */
export const CERTIFIABLE_ATTRIBUTES: ReadonlySet<string> = new Set([
  '2.5.4.3',
  '2.5.4.4',
  '2.5.4.5',
  '2.5.4.6',
  '2.5.4.42',
]);

const REQUEST_ID_CONTEXT = 'hsm-signing-pipeline/dss-ext/request-id/v1';

/** The pipeline request a SignRequest makes; a DssRefusal for what the pipeline cannot do. */
export function pipelineRequestOf(request: SignRequest): PipelineRequest {
  const scheme = SCHEMES[request.signatureAlgorithm];
  if (scheme === undefined)
    throw new DssRefusal('NOT_SUPPORTED', 'the RequestedSignatureAlgorithm is not supported');
  const unplaceable = request.requestedCertAttributes.find(
    (a) => a.required && (a.certNameType !== 'rdn' || !CERTIFIABLE_ATTRIBUTES.has(a.certAttributeRef)),
  );
  if (unplaceable !== undefined) {
    throw new DssRefusal(
      'NOT_SUPPORTED',
      'a required certificate attribute is outside the certificate profile',
    );
  }
  return {
    requestId: derivedRequestId(request.signRequester, request.requestId),
    ...scheme,
    tasks: request.tasks.map((task) => ({
      sigType: task.sigType,
      adesType: task.adesType,
      toBeSigned: task.toBeSignedBytes.toString('base64'),
      ...(task.adesObject?.signatureId === undefined ? {} : { signatureId: task.adesObject.signatureId }),
      ...(task.adesObject?.bytes === undefined
        ? {}
        : { adesObject: task.adesObject.bytes.toString('base64') }),
    })),
  };
}

/** The tasks as the request's documents, which the login's manifest binds. */
export function taskDocuments(request: PipelineRequest): ManifestDocument[] {
  return request.tasks.map((task) => ({
    digestAlgorithm: request.digestAlgorithm,
    digest: signTaskDigest(task, request.digestAlgorithm),
    format: 'dss-task',
  }));
}

/** A UUID (version 8 layout) from SHA-256 of the SignRequester and its RequestID. */
function derivedRequestId(signRequester: string, requestId: string): string {
  const hash = createHash('sha256')
    .update([REQUEST_ID_CONTEXT, signRequester, requestId].join('\n'))
    .digest();
  hash[6] = (hash[6]! & 0x0f) | 0x80;
  hash[8] = (hash[8]! & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
