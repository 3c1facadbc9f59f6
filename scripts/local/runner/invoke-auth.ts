/**
 * Who may invoke which function on the runner's Lambda Invoke endpoint, as IAM decides on AWS: every
 * caller signs its requests with AWS Signature Version 4 (the SDK does), using credentials the runner
 * generates at start and hands only to the processes that play that role. The endpoint recomputes the
 * signature with @smithy/signature-v4 and refuses an unknown key, a wrong signature, a stale date, or a
 * function that key may not invoke (the signer may only issue; the runner's API and operators may only
 * revoke and publish).
 */
import { createHash, createHmac, randomBytes, timingSafeEqual, type Hash, type Hmac } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { SignatureV4 } from '@smithy/signature-v4';

export interface InvokeCaller {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  /** Names of the functions this caller may invoke. */
  readonly functions: readonly string[];
}

/** A caller with fresh random credentials (never written anywhere but its processes' environment). */
export function newInvokeCaller(role: string, functions: readonly string[]): InvokeCaller {
  return {
    accessKeyId: `LOCAL${role.toUpperCase().replace(/[^A-Z0-9]/g, '')}${randomBytes(6).toString('hex').toUpperCase()}`,
    secretAccessKey: randomBytes(30).toString('base64url'),
    functions,
  };
}

/** The environment that makes a process's SDK clients sign as this caller. */
export function callerEnv(caller: InvokeCaller): Record<string, string> {
  return { AWS_ACCESS_KEY_ID: caller.accessKeyId, AWS_SECRET_ACCESS_KEY: caller.secretAccessKey };
}

/** SigV4 allows 15 minutes of clock difference. */
const MAX_SKEW_MS = 15 * 60_000;
const AUTHORIZATION =
  /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/lambda\/aws4_request, ?SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})$/;

/** The SHA-256 the signer needs, from Node's crypto (HMAC when given a secret). */
class NodeSha256 {
  private hash: Hash | Hmac;
  private readonly secret: Buffer | string | undefined;
  public constructor(secret?: string | ArrayBuffer | ArrayBufferView) {
    this.secret = toBytes(secret);
    this.hash = this.fresh();
  }
  public update(data: string | ArrayBuffer | ArrayBufferView): void {
    this.hash.update(toBytes(data)!);
  }
  public digest(): Promise<Uint8Array> {
    return Promise.resolve(this.hash.digest());
  }
  public reset(): void {
    this.hash = this.fresh();
  }
  private fresh(): Hash | Hmac {
    return this.secret === undefined ? createHash('sha256') : createHmac('sha256', this.secret);
  }
}

function toBytes(data: string | ArrayBuffer | ArrayBufferView | undefined): Buffer | string | undefined {
  if (data === undefined || typeof data === 'string') return data;
  if (ArrayBuffer.isView(data)) return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  return Buffer.from(data);
}

export type InvokeDecision =
  | { readonly allowed: true; readonly caller: InvokeCaller }
  | { readonly allowed: false; readonly status: 403; readonly type: string; readonly message: string };

const refuse = (type: string, message: string): InvokeDecision => ({
  allowed: false,
  status: 403,
  type,
  message,
});

/** Checks a request's SigV4 signature and the caller's permission to invoke `functionName`. */
export async function authorizeInvoke(
  req: IncomingMessage,
  body: Buffer,
  functionName: string,
  callers: readonly InvokeCaller[],
  now: number = Date.now(),
): Promise<InvokeDecision> {
  const match = AUTHORIZATION.exec(String(req.headers.authorization ?? ''));
  if (!match) return refuse('MissingAuthenticationTokenException', 'the request is not signed (SigV4)');
  const [, accessKeyId, , region, signedHeaders, signature] = match;
  const caller = callers.find((c) => c.accessKeyId === accessKeyId);
  if (!caller)
    return refuse('UnrecognizedClientException', 'the security token included in the request is invalid');
  const amzDate = String(req.headers['x-amz-date'] ?? '');
  const date = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(amzDate);
  const signingDate = date
    ? new Date(Date.UTC(+date[1], +date[2] - 1, +date[3], +date[4], +date[5], +date[6]))
    : undefined;
  if (!signingDate || Math.abs(now - signingDate.getTime()) > MAX_SKEW_MS) {
    return refuse('InvalidSignatureException', 'the request date is missing or too far from now');
  }
  const headers: Record<string, string> = {};
  for (const name of signedHeaders.split(';')) {
    const value = req.headers[name];
    if (value === undefined) return refuse('InvalidSignatureException', `signed header ${name} is missing`);
    headers[name] = Array.isArray(value) ? value.join(',') : value;
  }
  const url = new URL(req.url ?? '/', 'http://127.0.0.1');
  const signer = new SignatureV4({
    credentials: { accessKeyId, secretAccessKey: caller.secretAccessKey },
    region,
    service: 'lambda',
    sha256: NodeSha256,
  });
  const signed = await signer.sign(
    {
      method: req.method ?? 'POST',
      protocol: 'http:',
      hostname: String(req.headers.host ?? '').split(':')[0],
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      headers,
      body,
    },
    { signingDate },
  );
  const expected = /Signature=([0-9a-f]{64})/.exec(String(signed.headers.authorization ?? ''))?.[1] ?? '';
  if (
    expected.length !== signature.length ||
    !timingSafeEqual(Buffer.from(expected), Buffer.from(signature))
  ) {
    return refuse('InvalidSignatureException', 'the request signature does not match');
  }
  if (!caller.functions.includes(functionName)) {
    return refuse('AccessDeniedException', `this caller is not authorized to invoke ${functionName}`);
  }
  return { allowed: true, caller };
}
