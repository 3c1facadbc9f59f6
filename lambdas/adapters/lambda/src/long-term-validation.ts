/**
 * What B-T and B-LT need from the service's own PKI functions, reached as the CA is (Lambda Invoke, with
 * the API Gateway event their public endpoints receive): a time-stamp from the TSA function, an OCSP
 * response from the OCSP function; and an external TSA over HTTP, whose tokens are checked against its
 * configured trust anchors, and whose certificates' status B-LT carries too.
 */
import { X509Certificate, randomBytes } from 'node:crypto';
import type { LambdaClient } from '@aws-sdk/client-lambda';
import type { DigestAlgorithm } from '@pipeline/core/shared';
import type { TimeStamper, ValidationData, ValidationDataSource } from '@pipeline/core/signing';
import {
  derChildren,
  ocspRequestFor,
  pemToDer,
  readOcspResponse,
  statusPointers,
  timeStampRequest,
  timeStampTokenOf,
  verifyCrl,
  verifyTimeStampToken,
} from '@pipeline/der';
import { TimeStampUnavailableError, ValidationDataUnavailableError } from './errors';
import { LambdaFunction } from './lambda-function';

/** Calls a function that serves an HTTP binding (POST, DER body) and returns the DER it answered. */
async function postToFunction(
  client: LambdaClient,
  functionName: string,
  path: string,
  contentType: string,
  body: Buffer,
): Promise<{ statusCode: number; body: Buffer }> {
  const event = {
    httpMethod: 'POST',
    path,
    resource: path,
    headers: { 'Content-Type': contentType },
    body: body.toString('base64'),
    isBase64Encoded: true,
  };
  const out = await new LambdaFunction(client, functionName).invoke(event);
  if (out.functionError) throw new Error(`function error ${out.functionError}`);
  const result = JSON.parse(out.payload) as {
    statusCode?: number;
    body?: string;
    isBase64Encoded?: boolean;
  };
  return {
    statusCode: result.statusCode ?? 500,
    body: Buffer.from(result.body ?? '', result.isBase64Encoded ? 'base64' : 'latin1'),
  };
}

/**
 * One time-stamp of `data`: the RFC 3161 request (with a fresh nonce) goes through `send`, and the answer
 * must be a granted token for that imprint and nonce that passes `check`; any failure is
 * TimeStampUnavailableError.
 */
async function timeStampThrough(
  send: (query: Buffer) => Promise<{ status: number; body: Buffer }>,
  imprint: { readonly data: Buffer } | { readonly hash: Buffer; readonly nonce?: Buffer },
  algorithm: DigestAlgorithm,
  check: (token: Buffer) => void = () => undefined,
): Promise<Buffer> {
  const request = timeStampRequest({ nonce: randomBytes(8), ...imprint, algorithm });
  try {
    const reply = await send(request.der);
    if (reply.status !== 200) throw new Error(`HTTP ${reply.status}`);
    const token = timeStampTokenOf(reply.body, request);
    check(token);
    return token;
  } catch (err) {
    throw new TimeStampUnavailableError(`the TSA did not time-stamp: ${(err as Error).message}`, {
      cause: err,
    });
  }
}

/** The service's TSA function. */
export class FunctionTimeStamper implements TimeStamper {
  public constructor(
    private readonly client: LambdaClient,
    private readonly functionName: string,
  ) {}

  public timeStamp(data: Buffer, algorithm: DigestAlgorithm): Promise<Buffer> {
    return timeStampThrough(this.send, { data }, algorithm);
  }

  /** A time-stamp of a hash the caller computed (CSC signatures/timestamp), with its nonce if it gave one. */
  public timeStampHash(hash: Buffer, algorithm: DigestAlgorithm, nonce?: Buffer): Promise<Buffer> {
    return timeStampThrough(this.send, { hash, ...(nonce ? { nonce } : {}) }, algorithm);
  }

  private readonly send = async (query: Buffer): Promise<{ status: number; body: Buffer }> => {
    const reply = await postToFunction(
      this.client,
      this.functionName,
      '/tsa',
      'application/timestamp-query',
      query,
    );
    return { status: reply.statusCode, body: reply.body };
  };
}

/** An external TSA over HTTP (RFC 3161 3.4); its tokens must chain to the configured anchors. */
export class HttpTimeStamper implements TimeStamper {
  public constructor(
    private readonly url: string,
    private readonly trustAnchorsPem: readonly string[],
    private readonly timeoutMs = 5000,
  ) {}

  public timeStamp(data: Buffer, algorithm: DigestAlgorithm): Promise<Buffer> {
    return timeStampThrough(this.send, { data }, algorithm, this.check);
  }

  /** A time-stamp of a hash the caller computed (CSC signatures/timestamp), with its nonce if it gave one. */
  public timeStampHash(hash: Buffer, algorithm: DigestAlgorithm, nonce?: Buffer): Promise<Buffer> {
    return timeStampThrough(this.send, { hash, ...(nonce ? { nonce } : {}) }, algorithm, this.check);
  }

  private readonly send = async (query: Buffer): Promise<{ status: number; body: Buffer }> => {
    const response = await fetch(this.url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/timestamp-query' },
      body: new Uint8Array(query),
      signal: AbortSignal.timeout(this.timeoutMs),
    });
    return { status: response.status, body: Buffer.from(await response.arrayBuffer()) };
  };

  private readonly check = (token: Buffer): void => {
    verifyTimeStampToken(token, this.trustAnchorsPem);
  };
}

export interface ValidationDataCollectorDeps {
  readonly client: LambdaClient;
  readonly ocspFunctionName: string;
  /** The root's CRL as published (status of the issuing CA and of the TSA), DER. */
  readonly rootCrl: () => Promise<Buffer | undefined>;
  /**
   * An external TSA (TSA_URL) instead of the service's: the anchors its tokens chain to (TSA_TRUST_ANCHORS,
   * DER). Its certificates' status is not in the root's CRL: it is fetched from the CRL distribution
   * points (else the OCSP responders) its certificates name, and goes into the validation data with the
   * anchors.
   */
  readonly externalTsa?: { readonly trustAnchorsDer: readonly Buffer[]; readonly timeoutMs?: number };
}

/**
 * B-LT validation data: the leaf's chain to the root, an OCSP response for the leaf (`good`, the one the
 * CA returned with the new certificate, else asked of the responder; with the responder's certificate,
 * which needs no status of its own: id-pkix-ocsp-nocheck), the root's CRL for the issuing CA and the TSA, and the TSA's certificates; for
 * an external TSA also its chain's anchor and its certificates' status (CRL or OCSP, as they name it).
 */
export class ValidationDataCollector implements ValidationDataSource {
  public constructor(private readonly deps: ValidationDataCollectorDeps) {}

  public async collect(input: {
    readonly certificatePem: string;
    readonly chainPem: readonly string[];
    readonly timeStampToken: Buffer;
    readonly ocspResponse?: string;
  }): Promise<ValidationData> {
    try {
      const leaf = pemToDer(input.certificatePem);
      const chain = input.chainPem.map((pem) => pemToDer(pem));
      const [issuing] = chain;
      const serialHex = new X509Certificate(leaf).serialNumber.toLowerCase().replace(/^(00)+(?=.)/, '');
      const [reply, rootCrl, external] = await Promise.all([
        this.leafResponse(input.ocspResponse, serialHex, leaf, issuing),
        this.deps.rootCrl(),
        this.deps.externalTsa
          ? externalTsaStatus(input.timeStampToken, this.deps.externalTsa)
          : { certificates: [], ocspResponses: [], crls: [] },
      ]);
      const ocsp = readOcspResponse(reply.body, serialHex);
      if (ocsp.status !== 'good') throw new Error(`the new certificate is ${ocsp.status}`);
      if (!rootCrl) throw new Error('the root CRL is not published');
      return {
        certificates: distinct([
          ...chain,
          ...ocsp.certificates,
          ...tokenCertificates(input.timeStampToken),
          ...external.certificates,
        ]),
        ocspResponses: [reply.body, ...external.ocspResponses],
        crls: [rootCrl, ...external.crls],
      };
    } catch (err) {
      throw new ValidationDataUnavailableError(
        `the validation data could not be collected: ${(err as Error).message}`,
        { cause: err },
      );
    }
  }

  /**
   * The leaf's OCSP response: the one the CA issued it with when that is a successful `good` for this
   * serial (the responder would answer the same: the certificate was just recorded), else the
   * responder's, asked over its function.
   */
  private async leafResponse(
    fromCa: string | undefined,
    serialHex: string,
    leaf: Buffer,
    issuing: Buffer,
  ): Promise<{ readonly body: Buffer }> {
    if (fromCa) {
      const body = Buffer.from(fromCa, 'base64');
      try {
        if (readOcspResponse(body, serialHex).status === 'good') return { body };
      } catch {
        // Not usable: the responder is asked instead.
      }
    }
    const reply = await postToFunction(
      this.deps.client,
      this.deps.ocspFunctionName,
      '/ocsp',
      'application/ocsp-request',
      ocspRequestFor(leaf, issuing),
    );
    if (reply.statusCode !== 200) throw new Error(`OCSP HTTP ${reply.statusCode}`);
    return reply;
  }
}

/** The certificates a time-stamp token carries (SignedData.certificates). */
function tokenCertificates(tokenDer: Buffer): Buffer[] {
  // ContentInfo { contentType, [0] { SignedData { version, digestAlgorithms, encapContentInfo, [0] certs, ... } } }
  const [, explicit] = derChildren(tokenDer);
  const [signedData] = derChildren(explicit);
  const certificates = derChildren(signedData).find((field) => field[0] === 0xa0);
  return certificates ? derChildren(certificates).map((c) => Buffer.from(c)) : [];
}

const distinct = (certificates: readonly Buffer[]): Buffer[] =>
  certificates.filter((c, i) => certificates.findIndex((d) => d.equals(c)) === i);

const serialKey = (hex: string): string => hex.toLowerCase().replace(/^(00)+(?=.)/, '');

/**
 * The status of an external TSA's certificates (each one the token carries that is not an anchor), from
 * what each names: its CRL distribution points first (the CRL must verify under its issuer, be current
 * and not list it), else its OCSP responders (`good`). Also the anchors the chain ends at. Throws when a
 * certificate does not chain to the anchors or its status cannot be had.
 */
async function externalTsaStatus(
  tokenDer: Buffer,
  options: { readonly trustAnchorsDer: readonly Buffer[]; readonly timeoutMs?: number },
): Promise<ValidationData> {
  const timeout = options.timeoutMs ?? 5000;
  const anchors = options.trustAnchorsDer.map((der) => new X509Certificate(der));
  const carried = tokenCertificates(tokenDer).map((der) => new X509Certificate(der));
  const pool = [...carried, ...anchors];
  const certificates: Buffer[] = [];
  const crls: Buffer[] = [];
  const ocspResponses: Buffer[] = [];
  const now = Date.now();
  for (const certificate of carried) {
    if (anchors.some((anchor) => anchor.raw.equals(certificate.raw))) continue;
    const issuer = pool.find((c) => certificate.checkIssued(c) && certificate.verify(c.publicKey));
    if (!issuer)
      throw new Error(`the external TSA certificate ${certificate.subject} does not chain to its anchors`);
    if (anchors.includes(issuer)) certificates.push(issuer.raw);
    const { crlUrls, ocspUrls } = statusPointers(certificate.raw);
    const serial = serialKey(certificate.serialNumber);
    let found = false;
    for (const url of crlUrls) {
      const response = await fetch(url, { signal: AbortSignal.timeout(timeout) }).catch(() => undefined);
      if (!response?.ok) continue;
      const der = Buffer.from(await response.arrayBuffer());
      const crl = verifyCrl(der, issuer.raw);
      if (crl.nextUpdate.getTime() < now) continue;
      if (crl.revoked.some((entry) => serialKey(entry.serialHex) === serial)) {
        throw new Error(`the external TSA certificate ${certificate.subject} is revoked`);
      }
      crls.push(der);
      found = true;
      break;
    }
    for (const url of found ? [] : ocspUrls) {
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'Content-Type': 'application/ocsp-request' },
        body: new Uint8Array(ocspRequestFor(certificate.raw, issuer.raw)),
        signal: AbortSignal.timeout(timeout),
      }).catch(() => undefined);
      if (!response?.ok) continue;
      const der = Buffer.from(await response.arrayBuffer());
      const answer = readOcspResponse(der, serial);
      if (answer.status !== 'good') {
        throw new Error(`the external TSA certificate ${certificate.subject} is ${answer.status}`);
      }
      ocspResponses.push(der);
      certificates.push(...answer.certificates);
      found = true;
      break;
    }
    if (!found)
      throw new Error(`no status could be had for the external TSA certificate ${certificate.subject}`);
  }
  return { certificates, crls, ocspResponses };
}
