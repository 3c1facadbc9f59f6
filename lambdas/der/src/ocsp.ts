/**
 * OCSP (RFC 6960) request parsing and response signing for a delegated responder whose key stays in the
 * HSM. The responder logic (which serial is good, revoked or unknown) lives with the CA; this module only
 * speaks the protocol.
 */
import { createHash } from 'node:crypto';
import {
  BasicOCSPResponse,
  CertStatus,
  OCSPRequest,
  OCSPResponse,
  OCSPResponseStatus,
  ResponderID,
  ResponseBytes,
  ResponseData,
  RevokedInfo,
  SingleResponse,
  id_pkix_ocsp_basic,
  id_pkix_ocsp_nonce,
  CertID,
  Request,
  TBSRequest,
} from '@peculiar/asn1-ocsp';
import { AsnConvert, OctetString } from '@peculiar/asn1-schema';
import {
  AlgorithmIdentifier,
  CRLReason,
  CRLReasons,
  Certificate,
  Extension,
  SubjectPublicKeyInfo,
} from '@peculiar/asn1-x509';
import { algorithmIdentifier, schemeFor, signDer } from './algorithms';
import type { CertificateSigner } from './certificate';
import { outerLength, toArrayBuffer } from './der';
import { PkiError } from './errors';
import type { RevokedEntry } from '@pipeline/core/pki';

/** OCSP requests are small; anything over this is not one we answer. */
const MAX_REQUEST_BYTES = 8192;
/** RFC 8954: a nonce of 1 to 32 octets. */
const MAX_NONCE_BYTES = 32;

const SHA1 = '1.3.14.3.2.26';
const SHA256 = '2.16.840.1.101.3.4.2.1';
/** The CertID hash algorithms answered: SHA-1 (RFC 5019) and SHA-256 (RFC 9654). */
export type CertIdHash = 'sha1' | 'sha256';
const HASHES: Readonly<Record<string, CertIdHash>> = { [SHA1]: 'sha1', [SHA256]: 'sha256' };
const HASH_OIDS: Readonly<Record<CertIdHash, string>> = { sha1: SHA1, sha256: SHA256 };

/** The request cannot be answered at all: an OCSP `malformedRequest`. */
export class OcspMalformedRequestError extends PkiError {
  public override readonly name = 'OcspMalformedRequestError';
  public override readonly code = 'OCSP_MALFORMED_REQUEST';
}

/** One certificate asked about: its CertID as sent (echoed back) and what it names. */
export interface OcspQuery {
  readonly certId: CertID;
  readonly serialHex: string;
  /** The CertID's hash algorithm, when it is one this responder answers. */
  readonly hash?: CertIdHash;
  /** Whether issuerNameHash and issuerKeyHash name this responder's CA. */
  readonly forIssuer: (issuer: OcspIssuer) => boolean;
}

export interface ParsedOcspRequest {
  readonly queries: readonly OcspQuery[];
  /** The request's nonce extension value (the DER OCTET STRING content), echoed in the response. */
  readonly nonce?: Buffer;
}

/** The CA whose certificates the responder answers for: its subject Name DER and public key bits. */
export interface OcspIssuer {
  readonly nameDer: Buffer;
  readonly publicKey: Buffer;
}

/** The issuer from its certificate DER. */
export function ocspIssuerOf(certificateDer: Buffer): OcspIssuer {
  const certificate = AsnConvert.parse(certificateDer, Certificate);
  const spki: SubjectPublicKeyInfo = certificate.tbsCertificate.subjectPublicKeyInfo;
  return {
    nameDer: Buffer.from(AsnConvert.serialize(certificate.tbsCertificate.subject)),
    publicKey: Buffer.from(spki.subjectPublicKey),
  };
}

function hexOfInteger(value: ArrayBuffer): string {
  const hex = Buffer.from(value)
    .toString('hex')
    .replace(/^(00)+/, '');
  return hex === '' ? '0' : hex;
}

/** Parses a DER OCSPRequest; throws OcspMalformedRequestError for anything that is not one. */
export function parseOcspRequest(der: Buffer): ParsedOcspRequest {
  if (der.length === 0 || der.length > MAX_REQUEST_BYTES || outerLength(der) !== der.length) {
    throw new OcspMalformedRequestError('not a single DER OCSPRequest of acceptable size');
  }
  let request: OCSPRequest;
  try {
    request = AsnConvert.parse(der, OCSPRequest);
  } catch {
    throw new OcspMalformedRequestError('not a DER OCSPRequest');
  }
  const list = request.tbsRequest.requestList ?? [];
  if (list.length === 0 || list.length > 20) throw new OcspMalformedRequestError('1 to 20 requests expected');
  const queries = list.map((r): OcspQuery => {
    const certId = r.reqCert;
    const hash = HASHES[certId.hashAlgorithm.algorithm];
    const nameHash = Buffer.from(certId.issuerNameHash.buffer);
    const keyHash = Buffer.from(certId.issuerKeyHash.buffer);
    return {
      certId,
      serialHex: hexOfInteger(certId.serialNumber),
      ...(hash ? { hash } : {}),
      forIssuer: (issuer) =>
        hash !== undefined &&
        createHash(hash).update(issuer.nameDer).digest().equals(nameHash) &&
        createHash(hash).update(issuer.publicKey).digest().equals(keyHash),
    };
  });
  const nonceExtension = request.tbsRequest.requestExtensions?.find((e) => e.extnID === id_pkix_ocsp_nonce);
  let nonce: Buffer | undefined;
  if (nonceExtension) {
    try {
      nonce = Buffer.from(AsnConvert.parse(nonceExtension.extnValue.buffer, OctetString).buffer);
    } catch {
      throw new OcspMalformedRequestError('the nonce is not an OCTET STRING');
    }
    if (nonce.length < 1 || nonce.length > MAX_NONCE_BYTES) {
      throw new OcspMalformedRequestError(`the nonce must be 1 to ${MAX_NONCE_BYTES} octets (RFC 8954)`);
    }
  }
  return { queries, ...(nonce ? { nonce } : {}) };
}

export type OcspStatus =
  | { readonly kind: 'good' }
  | { readonly kind: 'unknown' }
  | { readonly kind: 'revoked'; readonly entry: RevokedEntry };

export interface OcspAnswer {
  readonly certId: CertID;
  readonly status: OcspStatus;
}

export interface OcspResponseContent {
  readonly answers: readonly OcspAnswer[];
  readonly producedAt: Date;
  readonly thisUpdate: Date;
  readonly nextUpdate: Date;
  readonly nonce?: Buffer;
  /** The delegated responder's certificate (DER), included so clients can verify the response. */
  readonly responderCertificateDer: Buffer;
}

/** A successful OCSPResponse (BasicOCSPResponse), responder identified by key hash, signed by `signer`. */
export async function signOcspResponse(
  content: OcspResponseContent,
  signer: CertificateSigner,
): Promise<Buffer> {
  const scheme = schemeFor(signer.keyType);
  const responder = AsnConvert.parse(content.responderCertificateDer, Certificate);
  const keyHash = createHash('sha1')
    .update(Buffer.from(responder.tbsCertificate.subjectPublicKeyInfo.subjectPublicKey))
    .digest();
  const responses = content.answers.map(
    (answer) =>
      new SingleResponse({
        certID: answer.certId,
        certStatus: certStatus(answer.status),
        thisUpdate: content.thisUpdate,
        nextUpdate: content.nextUpdate,
      }),
  );
  const data = new ResponseData({
    responderID: new ResponderID({ byKey: new OctetString(keyHash) }),
    producedAt: content.producedAt,
    responses,
    ...(content.nonce
      ? {
          responseExtensions: [
            new Extension({
              extnID: id_pkix_ocsp_nonce,
              critical: false,
              extnValue: new OctetString(AsnConvert.serialize(new OctetString(content.nonce))),
            }),
          ],
        }
      : {}),
  });
  const dataDer = Buffer.from(AsnConvert.serialize(data));
  const signature = await signDer(dataDer, scheme, signer.sign);
  const basic = new BasicOCSPResponse({
    tbsResponseData: data,
    signatureAlgorithm: algorithmIdentifier(scheme),
    signature: toArrayBuffer(signature),
    certs: [responder],
  });
  return Buffer.from(
    AsnConvert.serialize(
      new OCSPResponse({
        responseStatus: OCSPResponseStatus.successful,
        responseBytes: new ResponseBytes({
          responseType: id_pkix_ocsp_basic,
          response: new OctetString(AsnConvert.serialize(basic)),
        }),
      }),
    ),
  );
}

/** An unsigned error response: malformedRequest, internalError, tryLater or unauthorized. */
export function ocspErrorResponse(
  status: 'malformedRequest' | 'internalError' | 'tryLater' | 'unauthorized',
): Buffer {
  return Buffer.from(AsnConvert.serialize(new OCSPResponse({ responseStatus: OCSPResponseStatus[status] })));
}

function certStatus(status: OcspStatus): CertStatus {
  switch (status.kind) {
    case 'good':
      return new CertStatus({ good: null });
    case 'unknown':
      return new CertStatus({ unknown: null });
    case 'revoked':
      return new CertStatus({
        revoked: new RevokedInfo({
          // GeneralizedTime without fractions (RFC 5280 4.1.2.5.2).
          revocationTime: new Date(Math.floor(status.entry.revokedAt.getTime() / 1000) * 1000),
          ...(status.entry.reason === 'unspecified'
            ? {}
            : { revocationReason: new CRLReason(CRLReasons[status.entry.reason]) }),
        }),
      });
  }
}

/**
 * The CertID of a serial under `issuer` in one canonical encoding (hash parameters NULL, as OpenSSL and
 * Java send them; the serial's minimal DER INTEGER): what a response names, whatever the request's bytes.
 */
export function canonicalCertId(issuer: OcspIssuer, serialHex: string, hash: CertIdHash): CertID {
  const digits = serialHex.length % 2 ? `0${serialHex}` : serialHex;
  const magnitude = Buffer.from(digits, 'hex');
  const serial = magnitude[0] & 0x80 ? Buffer.concat([Buffer.from([0]), magnitude]) : magnitude;
  return new CertID({
    hashAlgorithm: new AlgorithmIdentifier({ algorithm: HASH_OIDS[hash], parameters: null }),
    issuerNameHash: new OctetString(createHash(hash).update(issuer.nameDer).digest()),
    issuerKeyHash: new OctetString(createHash(hash).update(issuer.publicKey).digest()),
    serialNumber: toArrayBuffer(serial),
  });
}

/** A one-certificate OCSP request (SHA-1 CertID, RFC 5019's profile), as a relying party sends it. */
export function ocspRequestFor(certificateDer: Buffer, issuerCertificateDer: Buffer): Buffer {
  const issuer = ocspIssuerOf(issuerCertificateDer);
  const certificate = AsnConvert.parse(certificateDer, Certificate);
  const request = new OCSPRequest({
    tbsRequest: new TBSRequest({
      requestList: [
        new Request({
          reqCert: canonicalCertId(issuer, hexOfInteger(certificate.tbsCertificate.serialNumber), 'sha1'),
        }),
      ],
    }),
  });
  return Buffer.from(AsnConvert.serialize(request));
}

/** What an OCSP response says of one serial: its status and when it was produced. */
export interface OcspResponseSummary {
  readonly status: 'good' | 'revoked' | 'unknown';
  readonly producedAt: Date;
  /** The responder certificates the response carries (DER). */
  readonly certificates: readonly Buffer[];
}

/**
 * Reads a successful basic OCSP response about `serialHex` (its signature is for the relying party to
 * check); throws OcspResponseError when it is anything else.
 */
export function readOcspResponse(der: Buffer, serialHex: string): OcspResponseSummary {
  let basic: BasicOCSPResponse;
  try {
    const response = AsnConvert.parse(der, OCSPResponse);
    if (response.responseStatus !== OCSPResponseStatus.successful || !response.responseBytes) {
      throw new Error(`status ${response.responseStatus}`);
    }
    if (response.responseBytes.responseType !== id_pkix_ocsp_basic) throw new Error('not basic');
    basic = AsnConvert.parse(response.responseBytes.response.buffer, BasicOCSPResponse);
  } catch (err) {
    throw new OcspResponseError(`not a successful basic OCSP response (${(err as Error).message})`);
  }
  const single = basic.tbsResponseData.responses.find(
    (r) => hexOfInteger(r.certID.serialNumber) === serialHex,
  );
  if (!single) throw new OcspResponseError('the response does not answer for that certificate');
  const status =
    single.certStatus.good !== undefined ? 'good' : single.certStatus.revoked ? 'revoked' : 'unknown';
  return {
    status,
    producedAt: basic.tbsResponseData.producedAt,
    certificates: (basic.certs ?? []).map((c) => Buffer.from(AsnConvert.serialize(c))),
  };
}

/** An OCSP response that is not the successful answer asked for. */
export class OcspResponseError extends PkiError {
  public override readonly name = 'OcspResponseError';
  public override readonly code = 'OCSP_RESPONSE_INVALID';
}
