/**
 * RFC 3161 time-stamps (with RFC 5816's ESSCertIDv2): request parsing and token signing for a TSA whose
 * key stays in the HSM, the request a client sends, and reading a response and its token. The TSA's
 * policy (which requests it answers, its clock) lives with the CA; this module only speaks the protocol.
 */
import { X509Certificate, createHash, verify } from 'node:crypto';
import {
  CertificateChoices,
  CertificateSet,
  ContentInfo,
  DigestAlgorithmIdentifiers,
  EncapsulatedContent,
  EncapsulatedContentInfo,
  IssuerAndSerialNumber,
  SignedData,
  SignerIdentifier,
  SignerInfo,
  SignerInfos,
  id_messageDigest,
  id_signedData,
} from '@peculiar/asn1-cms';
import { AsnConvert, OctetString } from '@peculiar/asn1-schema';
import { Certificate, GeneralName, id_ce_extKeyUsage } from '@peculiar/asn1-x509';
import {
  Accuracy,
  MessageImprint,
  PKIFailureInfo,
  PKIFreeText,
  PKIStatus,
  PKIStatusInfo,
  TSTInfo,
  TimeStampReq,
  TimeStampResp,
  TimeStampToken,
  id_ct_tstInfo,
} from '@peculiar/asn1-tsp';
import { DIGEST_LENGTH, nodeHashName, type DigestAlgorithm } from '@pipeline/core/shared';
import { schemeFor } from './algorithms';
import { id_kp_timeStamping, type CertificateSigner } from './certificate';
import {
  contentTypeAttribute,
  derOrdered,
  digestAlgorithmIdentifier,
  digestAlgorithmOfOid,
  messageDigestAttribute,
  signatureAlgorithmIdentifier,
  signedAttributesDer,
  signingCertificateV2Attribute,
} from './cms';
import { outerLength, toArrayBuffer } from './der';
import { PkiError } from './errors';

const MAX_REQUEST_BYTES = 4096;
/** PKIFailureInfo bits (RFC 3161 2.4.2), by name. */
const FAILURE_BITS = {
  badAlg: 0,
  badRequest: 2,
  badDataFormat: 5,
  timeNotAvailable: 14,
  unacceptedPolicy: 15,
  unacceptedExtension: 16,
  systemFailure: 25,
} as const;
export type TimeStampFailure = keyof typeof FAILURE_BITS;

/** A request the TSA refuses; `failure` is what the rejection response says. */
export class TimeStampRequestError extends PkiError {
  public override readonly name = 'TimeStampRequestError';
  public override readonly code = 'TSA_BAD_REQUEST';
  public constructor(
    public readonly failure: TimeStampFailure,
    message: string,
  ) {
    super(message);
  }
}

/** A response that is not a granted, well-formed time-stamp for what was asked. */
export class TimeStampResponseError extends PkiError {
  public override readonly name = 'TimeStampResponseError';
  public override readonly code = 'TSA_RESPONSE_INVALID';
}

export interface MessageImprintValue {
  readonly algorithm: DigestAlgorithm;
  readonly hash: Buffer;
}

export interface ParsedTimeStampRequest {
  readonly imprint: MessageImprintValue;
  readonly policy?: string;
  /** The request's nonce INTEGER content, echoed in the token. */
  readonly nonce?: ArrayBuffer;
  /** Whether the TSA's certificate goes into the token. */
  readonly certReq: boolean;
}

/** Parses a DER TimeStampReq; throws TimeStampRequestError naming the failure to answer with. */
export function parseTimeStampRequest(der: Buffer): ParsedTimeStampRequest {
  if (der.length === 0 || der.length > MAX_REQUEST_BYTES || outerLength(der) !== der.length) {
    throw new TimeStampRequestError('badDataFormat', 'not a single DER TimeStampReq of acceptable size');
  }
  let request: TimeStampReq;
  try {
    request = AsnConvert.parse(der, TimeStampReq);
  } catch {
    throw new TimeStampRequestError('badDataFormat', 'not a DER TimeStampReq');
  }
  if (request.version !== 1) throw new TimeStampRequestError('badRequest', 'only version 1 requests');
  if (request.extensions?.length) {
    throw new TimeStampRequestError('unacceptedExtension', 'request extensions are not supported');
  }
  const algorithm = digestAlgorithmOfOid(request.messageImprint.hashAlgorithm.algorithm);
  if (!algorithm)
    throw new TimeStampRequestError('badAlg', 'the imprint must be SHA-256, SHA-384 or SHA-512');
  const hash = Buffer.from(request.messageImprint.hashedMessage.buffer);
  if (hash.length !== DIGEST_LENGTH[algorithm]) {
    throw new TimeStampRequestError(
      'badDataFormat',
      `a ${algorithm} imprint is ${DIGEST_LENGTH[algorithm]} bytes`,
    );
  }
  if (request.nonce && request.nonce.byteLength > 32) {
    throw new TimeStampRequestError('badDataFormat', 'the nonce is longer than 256 bits');
  }
  return {
    imprint: { algorithm, hash },
    ...(request.reqPolicy ? { policy: request.reqPolicy } : {}),
    ...(request.nonce ? { nonce: request.nonce } : {}),
    certReq: request.certReq,
  };
}

/**
 * A TimeStampReq for the hash of `data`, or for `hash` itself (a client's imprint), with the nonce given and
 * the TSA's certificate asked for.
 */
export function timeStampRequest(args: {
  readonly data?: Buffer;
  readonly hash?: Buffer;
  readonly algorithm: DigestAlgorithm;
  readonly nonce?: Buffer;
  readonly policy?: string;
}): { der: Buffer; imprint: MessageImprintValue; nonce?: Buffer } {
  const hash =
    args.hash ??
    createHash(nodeHashName(args.algorithm))
      .update(args.data ?? Buffer.alloc(0))
      .digest();
  const nonce = args.nonce ? positive(args.nonce) : undefined;
  const request = new TimeStampReq({
    version: 1,
    messageImprint: new MessageImprint({
      hashAlgorithm: digestAlgorithmIdentifier(args.algorithm),
      hashedMessage: new OctetString(hash),
    }),
    ...(args.policy ? { reqPolicy: args.policy } : {}),
    ...(nonce ? { nonce: toArrayBuffer(nonce) } : {}),
    certReq: true,
  });
  return {
    der: Buffer.from(AsnConvert.serialize(request)),
    imprint: { algorithm: args.algorithm, hash },
    ...(nonce ? { nonce } : {}),
  };
}

/** A rejection TimeStampResp (status rejection, the failure bit, a short English reason). */
export function timeStampRejection(failure: TimeStampFailure, reason: string): Buffer {
  const failInfo = new PKIFailureInfo(2 ** FAILURE_BITS[failure]);
  const response = new TimeStampResp({
    status: new PKIStatusInfo({
      status: PKIStatus.rejection,
      statusString: new PKIFreeText([reason]),
      failInfo,
    }),
  });
  return Buffer.from(AsnConvert.serialize(response));
}

export interface TimeStampTokenInput {
  readonly request: ParsedTimeStampRequest;
  readonly policy: string;
  /** Positive, at most 20 octets (RFC 3161: up to 160 bits), unique per TSA. */
  readonly serial: Buffer;
  /** Whole seconds; the accuracy says how far off it may be. */
  readonly genTime: Date;
  readonly accuracySeconds: number;
  readonly tsaCertificateDer: Buffer;
  /** The TSA's key (in the HSM) and name. */
  readonly signer: CertificateSigner;
}

/**
 * A granted TimeStampResp whose token is a SignedData (version 3, eContentType id-ct-TSTInfo) signed by
 * the TSA over signed attributes contentType, messageDigest and signingCertificateV2 (RFC 5816: the
 * SHA-256 of the TSA certificate and its issuer and serial), carrying the TSA certificate when asked.
 */
export async function signTimeStampResponse(input: TimeStampTokenInput): Promise<Buffer> {
  const tstInfo = new TSTInfo({
    version: 1,
    policy: input.policy,
    messageImprint: new MessageImprint({
      hashAlgorithm: digestAlgorithmIdentifier(input.request.imprint.algorithm),
      hashedMessage: new OctetString(input.request.imprint.hash),
    }),
    serialNumber: toArrayBuffer(positive(input.serial)),
    genTime: new Date(Math.floor(input.genTime.getTime() / 1000) * 1000),
    accuracy: new Accuracy({ seconds: input.accuracySeconds }),
    ordering: false,
    ...(input.request.nonce ? { nonce: input.request.nonce } : {}),
    tsa: new GeneralName({ directoryName: input.signer.name }),
  });
  const tstInfoDer = Buffer.from(AsnConvert.serialize(tstInfo));
  const scheme = schemeFor(input.signer.keyType);
  const certificate = AsnConvert.parse(input.tsaCertificateDer, Certificate);
  const attributes = derOrdered([
    contentTypeAttribute(id_ct_tstInfo),
    messageDigestAttribute(createHash(nodeHashName(scheme.digestAlgorithm)).update(tstInfoDer).digest()),
    signingCertificateV2Attribute(input.tsaCertificateDer),
  ]);
  const toBeSigned = createHash(nodeHashName(scheme.digestAlgorithm))
    .update(signedAttributesDer(attributes))
    .digest();
  const signature = await input.signer.sign(toBeSigned, {
    digestAlgorithm: scheme.digestAlgorithm,
    signatureAlgorithm: scheme.signatureAlgorithm,
  });
  const digestAlgorithm = digestAlgorithmIdentifier(scheme.digestAlgorithm);
  const signedData = new SignedData({
    version: 3,
    digestAlgorithms: new DigestAlgorithmIdentifiers([digestAlgorithm]),
    encapContentInfo: new EncapsulatedContentInfo({
      eContentType: id_ct_tstInfo,
      eContent: new EncapsulatedContent({ single: new OctetString(tstInfoDer) }),
    }),
    ...(input.request.certReq
      ? { certificates: new CertificateSet([new CertificateChoices({ certificate })]) }
      : {}),
    signerInfos: new SignerInfos([
      new SignerInfo({
        version: 1,
        sid: new SignerIdentifier({
          issuerAndSerialNumber: new IssuerAndSerialNumber({
            issuer: certificate.tbsCertificate.issuer,
            serialNumber: certificate.tbsCertificate.serialNumber,
          }),
        }),
        digestAlgorithm,
        signedAttrs: attributes,
        signatureAlgorithm: signatureAlgorithmIdentifier(scheme.signatureAlgorithm, scheme.digestAlgorithm),
        signature: new OctetString(signature),
      }),
    ]),
  });
  const response = new TimeStampResp({
    status: new PKIStatusInfo({ status: PKIStatus.granted }),
    timeStampToken: new TimeStampToken({
      contentType: id_signedData,
      content: AsnConvert.serialize(signedData),
    }),
  });
  return Buffer.from(AsnConvert.serialize(response));
}

/** What a token says (its signature is checked by whoever relies on it: openssl, DSS). */
export interface TimeStampTokenInfo {
  readonly genTime: Date;
  readonly imprint: MessageImprintValue;
  readonly serialHex: string;
  readonly policy: string;
  readonly nonce?: Buffer;
}

export function timeStampTokenInfo(tokenDer: Buffer): TimeStampTokenInfo {
  try {
    const token = AsnConvert.parse(tokenDer, ContentInfo);
    const signedData = AsnConvert.parse(token.content, SignedData);
    const content = signedData.encapContentInfo;
    if (content.eContentType !== id_ct_tstInfo || !content.eContent?.single) throw new Error('content');
    const info = AsnConvert.parse(content.eContent.single.buffer, TSTInfo);
    const algorithm = digestAlgorithmOfOid(info.messageImprint.hashAlgorithm.algorithm);
    if (!algorithm) throw new Error('imprint algorithm');
    return {
      genTime: info.genTime,
      imprint: { algorithm, hash: Buffer.from(info.messageImprint.hashedMessage.buffer) },
      serialHex: Buffer.from(info.serialNumber).toString('hex'),
      policy: info.policy,
      ...(info.nonce ? { nonce: Buffer.from(info.nonce) } : {}),
    };
  } catch {
    throw new TimeStampResponseError('not a time-stamp token');
  }
}

/**
 * The token of a granted response that answers `request` (same imprint, same nonce); throws
 * TimeStampResponseError for a rejection or a token for something else.
 */
export function timeStampTokenOf(
  responseDer: Buffer,
  request: { readonly imprint: MessageImprintValue; readonly nonce?: Buffer },
): Buffer {
  let response: TimeStampResp;
  try {
    response = AsnConvert.parse(responseDer, TimeStampResp);
  } catch {
    throw new TimeStampResponseError('not a DER TimeStampResp');
  }
  const status = response.status.status;
  if (status !== PKIStatus.granted && status !== PKIStatus.grantedWithMods) {
    const text = response.status.statusString?.join('; ') ?? '';
    throw new TimeStampResponseError(`the TSA refused (status ${status}${text ? `: ${text}` : ''})`);
  }
  if (!response.timeStampToken) throw new TimeStampResponseError('a granted response without a token');
  const token = Buffer.from(AsnConvert.serialize(response.timeStampToken));
  const info = timeStampTokenInfo(token);
  if (
    info.imprint.algorithm !== request.imprint.algorithm ||
    !info.imprint.hash.equals(request.imprint.hash)
  ) {
    throw new TimeStampResponseError('the token is for another imprint');
  }
  if (request.nonce && !(info.nonce && positive(info.nonce).equals(positive(request.nonce)))) {
    throw new TimeStampResponseError('the token does not echo the nonce');
  }
  return token;
}

/** An INTEGER's content octets for a non-negative value: leading zeros stripped, 0x00 before a high bit. */
function positive(bytes: Buffer): Buffer {
  let start = 0;
  while (start < bytes.length - 1 && bytes[start] === 0) start++;
  const trimmed = bytes.subarray(start);
  return trimmed[0] & 0x80 ? Buffer.concat([Buffer.from([0]), trimmed]) : Buffer.from(trimmed);
}

/**
 * Checks a token's signature and its signer: the SignedData's signer certificate (carried in the token)
 * signs the signed attributes, whose messageDigest is the TSTInfo's hash; the certificate has the critical
 * id-kp-timeStamping EKU and chains (through the token's other certificates) to one of `trustAnchorsPem`.
 * Returns the signer's chain, leaf first, anchor last (DER).
 */
export function verifyTimeStampToken(tokenDer: Buffer, trustAnchorsPem: readonly string[]): Buffer[] {
  try {
    const token = AsnConvert.parse(tokenDer, ContentInfo);
    const signedData = AsnConvert.parse(token.content, SignedData);
    const content = signedData.encapContentInfo.eContent?.single;
    const [signer] = signedData.signerInfos;
    if (!content || !signer?.signedAttrs || signedData.signerInfos.length !== 1) throw new Error('shape');
    const certificates = (signedData.certificates ?? [])
      .map((c) => c.certificate)
      .filter((c): c is Certificate => c !== undefined)
      .map((c) => Buffer.from(AsnConvert.serialize(c)));
    const sid = signer.sid.issuerAndSerialNumber;
    const leafDer = certificates.find((der) => {
      const tbs = AsnConvert.parse(der, Certificate).tbsCertificate;
      return (
        sid !== undefined &&
        Buffer.from(tbs.serialNumber).equals(Buffer.from(sid.serialNumber)) &&
        Buffer.from(AsnConvert.serialize(tbs.issuer)).equals(Buffer.from(AsnConvert.serialize(sid.issuer)))
      );
    });
    if (!leafDer) throw new Error('no signer certificate in the token');
    const digestName = nodeHashName(requiredDigestAlgorithm(signer.digestAlgorithm.algorithm));
    const messageDigest = signer.signedAttrs.find((a) => a.attrType === id_messageDigest);
    const expected = createHash(digestName).update(Buffer.from(content.buffer)).digest();
    if (
      !messageDigest ||
      !Buffer.from(AsnConvert.parse(messageDigest.attrValues[0], OctetString).buffer).equals(expected)
    ) {
      throw new Error('messageDigest');
    }
    const leaf = new X509Certificate(leafDer);
    const verified = verify(
      digestName,
      signedAttributesDer(signer.signedAttrs),
      leaf.publicKey,
      Buffer.from(signer.signature.buffer),
    );
    if (!verified) throw new Error('signature');
    const eku = AsnConvert.parse(leafDer, Certificate).tbsCertificate.extensions?.find(
      (e) => e.extnID === id_ce_extKeyUsage,
    );
    if (!eku?.critical || !leaf.keyUsage?.includes(id_kp_timeStamping) || leaf.keyUsage.length !== 1) {
      throw new Error('not a TSA certificate');
    }
    const pool = [...certificates.map((der) => new X509Certificate(der))];
    const anchors = trustAnchorsPem.map((p) => new X509Certificate(p));
    const chain = [leaf];
    for (let depth = 0; depth < 5; depth++) {
      const current = chain[chain.length - 1];
      const anchor = anchors.find((a) => current.checkIssued(a) && current.verify(a.publicKey));
      if (anchor) return [...chain, anchor].map((c) => c.raw);
      const next = pool.find((c) => c !== current && current.checkIssued(c) && current.verify(c.publicKey));
      if (!next || chain.includes(next)) break;
      chain.push(next);
    }
    throw new Error('no chain to a trust anchor');
  } catch (err) {
    if (err instanceof TimeStampResponseError) throw err;
    throw new TimeStampResponseError(`the time-stamp token does not verify (${(err as Error).message})`);
  }
}

/** The SHA-2 algorithm an OID names; anything else (SHA-1 among them) is an error. */
function requiredDigestAlgorithm(oid: string): DigestAlgorithm {
  const algorithm = digestAlgorithmOfOid(oid);
  if (!algorithm) throw new Error('digest algorithm');
  return algorithm;
}
