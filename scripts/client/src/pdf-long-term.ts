/**
 * PAdES beyond B-T, on the e-service side (ETSI EN 319 142-1): B-LT writes the validation data the
 * service returned into the PDF's Document Security Store (/DSS with /Certs, /OCSPs, /CRLs and a /VRI entry
 * for the signature) in an incremental update; B-LTA then adds a document time-stamp (a /DocTimeStamp
 * signature field, SubFilter ETSI.RFC3161) over the whole file, DSS included, from an RFC 3161 TSA.
 * Earlier revisions stay byte for byte as they were, so every signature in the file stays valid.
 */
import { createHash, randomBytes } from 'node:crypto';
import { PDFArray, PDFDict, PDFDocument, PDFName, type PDFRef } from '@cantoo/pdf-lib';
import { AsnConvert, OctetString } from '@peculiar/asn1-schema';
import { AlgorithmIdentifier } from '@peculiar/asn1-x509';
import { MessageImprint, PKIStatus, TimeStampReq, TimeStampResp } from '@peculiar/asn1-tsp';
import { preparePdfSignature } from './pdf-signature';

/** Validation data as the service returns it (base64 DER). */
export interface ValidationDataB64 {
  readonly certificates: readonly string[];
  readonly ocspResponses: readonly string[];
  readonly crls: readonly string[];
}

/** The TSA refused or answered something that is not a token for the request. */
export class TimeStampError extends Error {
  public override readonly name = 'TimeStampError';
  public readonly code = 'TSA_FAILED';
}

/**
 * B-LT: an incremental update adding (or extending) the DSS with the validation data, and a VRI entry
 * keyed by the upper-case SHA-1 of the signature's CMS.
 */
export async function addDocumentSecurityStore(
  pdf: Buffer,
  signatureCms: Buffer,
  data: ValidationDataB64,
): Promise<Buffer> {
  const doc = await PDFDocument.load(pdf, { updateMetadata: false });
  const snapshot = doc.takeSnapshot();
  const { context, catalog } = doc;
  const streams = (list: readonly string[]): PDFRef[] =>
    list.map((b64) => context.register(context.stream(Buffer.from(b64, 'base64'))));
  const certs = streams(data.certificates);
  const ocsps = streams(data.ocspResponses);
  const crls = streams(data.crls);

  const existing = catalog.lookup(PDFName.of('DSS'));
  const dss = existing instanceof PDFDict ? existing : context.obj({});
  const append = (dict: PDFDict, key: string, refs: PDFRef[]): void => {
    if (refs.length === 0) return;
    const current = dict.lookup(PDFName.of(key));
    if (current instanceof PDFArray) refs.forEach((r) => current.push(r));
    else dict.set(PDFName.of(key), context.obj(refs));
  };
  append(dss, 'Certs', certs);
  append(dss, 'OCSPs', ocsps);
  append(dss, 'CRLs', crls);
  const vriKey = createHash('sha1').update(signatureCms).digest('hex').toUpperCase();
  const vri = dss.lookup(PDFName.of('VRI'));
  const vriDict = vri instanceof PDFDict ? vri : context.obj({});
  const entry = context.obj({});
  append(entry, 'Cert', certs);
  append(entry, 'OCSP', ocsps);
  append(entry, 'CRL', crls);
  vriDict.set(PDFName.of(vriKey), entry);
  dss.set(PDFName.of('VRI'), vriDict);

  const dssRef = catalog.get(PDFName.of('DSS'));
  if (dssRef && 'objectNumber' in dssRef) snapshot.markRefForSave(dssRef as PDFRef);
  else catalog.set(PDFName.of('DSS'), context.register(dss));
  snapshot.markRefForSave(doc.context.trailerInfo.Root as PDFRef);
  const increment = Buffer.from(await doc.saveIncremental(snapshot, { useObjectStreams: false }));
  return Buffer.concat([pdf, increment]);
}

/** An RFC 3161 token (DER) for a SHA-256 hash, from the TSA at `tsaUrl` (application/timestamp-query). */
export async function requestTimeStamp(tsaUrl: string, sha256: Buffer): Promise<Buffer> {
  const nonce = Buffer.concat([Buffer.from([0x01]), randomBytes(8)]);
  const request = new TimeStampReq({
    version: 1,
    messageImprint: new MessageImprint({
      hashAlgorithm: new AlgorithmIdentifier({ algorithm: '2.16.840.1.101.3.4.2.1' }),
      hashedMessage: new OctetString(sha256),
    }),
    nonce: nonce.buffer.slice(nonce.byteOffset, nonce.byteOffset + nonce.length) as ArrayBuffer,
    certReq: true,
  });
  const response = await fetch(tsaUrl, {
    method: 'POST',
    headers: { 'Content-Type': 'application/timestamp-query' },
    body: Buffer.from(AsnConvert.serialize(request)),
    signal: AbortSignal.timeout(10_000),
  });
  if (!response.ok) throw new TimeStampError(`the TSA answered HTTP ${response.status}`);
  let reply: TimeStampResp;
  try {
    reply = AsnConvert.parse(Buffer.from(await response.arrayBuffer()), TimeStampResp);
  } catch {
    throw new TimeStampError('the TSA answered something that is not a TimeStampResp');
  }
  if (reply.status.status !== PKIStatus.granted || !reply.timeStampToken) {
    throw new TimeStampError(
      `the TSA refused: ${reply.status.statusString?.join('; ') ?? `status ${reply.status.status}`}`,
    );
  }
  // The validator checks the token's signature and imprint; the nonce shows it answers this request.
  const token = Buffer.from(AsnConvert.serialize(reply.timeStampToken));
  if (!token.includes(nonce)) throw new TimeStampError('the token does not answer this request');
  return token;
}

/** B-LTA: a document time-stamp over the whole PDF as it is now (DSS included), in a new revision. */
export async function addDocumentTimeStamp(pdf: Buffer, tsaUrl: string): Promise<Buffer> {
  const prepared = await preparePdfSignature(pdf, { signingTime: new Date(), kind: 'document-time-stamp' });
  const token = await requestTimeStamp(tsaUrl, prepared.digest('sha256'));
  return prepared.embed(token);
}
