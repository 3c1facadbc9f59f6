/**
 * Who may invoke which function on the runner's Lambda Invoke endpoint, as IAM decides on AWS: every
 * caller signs its requests with AWS Signature Version 4 (the SDK does), using credentials the runner
 * generates at start and hands only to the processes that play that role. The endpoint recomputes the
 * signature with @smithy/signature-v4 and refuses an unknown key, a wrong signature, a stale date, or a
 * function that key may not invoke (the signer may only issue; the runner's API and operators may only
 * revoke and publish).
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { SignatureV4 } from '@smithy/signature-v4';
import { NodeSha256, type SigV4Credentials } from '../../client/src/sigv4';

export interface InvokeCaller extends SigV4Credentials {
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
  /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([a-z0-9-]+)\/aws4_request, ?SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})$/;

export type SigV4Check<C> =
  | { readonly ok: true; readonly caller: C }
  | {
      readonly ok: false;
      /** AWS's error type (MissingAuthenticationToken, UnrecognizedClient, InvalidSignature). */
      readonly type: string;
      readonly message: string;
    };

/**
 * Recomputes a request's SigV4 signature for `service` with the secret of the caller its access key id
 * names, as AWS does: an unsigned request, an unknown key, a stale date, or a signature that does not
 * match is refused.
 */
export async function verifySigV4<C extends SigV4Credentials>(
  req: IncomingMessage,
  body: Buffer,
  service: string,
  callers: readonly C[],
  now: number = Date.now(),
): Promise<SigV4Check<C>> {
  const fail = (type: string, message: string): SigV4Check<C> => ({ ok: false, type, message });
  const match = AUTHORIZATION.exec(String(req.headers.authorization ?? ''));
  if (!match || match[4] !== service)
    return fail('MissingAuthenticationTokenException', 'the request is not signed (SigV4)');
  const [, accessKeyId, , region, , signedHeaders, signature] = match;
  const caller = callers.find((c) => c.accessKeyId === accessKeyId);
  if (!caller)
    return fail('UnrecognizedClientException', 'the security token included in the request is invalid');
  const amzDate = String(req.headers['x-amz-date'] ?? '');
  const date = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(amzDate);
  const signingDate = date
    ? new Date(Date.UTC(+date[1], +date[2] - 1, +date[3], +date[4], +date[5], +date[6]))
    : undefined;
  if (!signingDate || Math.abs(now - signingDate.getTime()) > MAX_SKEW_MS) {
    return fail('InvalidSignatureException', 'the request date is missing or too far from now');
  }
  const headers: Record<string, string> = {};
  for (const name of signedHeaders.split(';')) {
    const value = req.headers[name];
    if (value === undefined) return fail('InvalidSignatureException', `signed header ${name} is missing`);
    headers[name] = Array.isArray(value) ? value.join(',') : value;
  }
  // The signer takes a declared payload hash (x-amz-content-sha256) as it is: it must be this body's, or a
  // signature would carry over to any other body.
  const declared = headers['x-amz-content-sha256'];
  if (declared !== undefined && declared !== createHash('sha256').update(body).digest('hex')) {
    return fail('InvalidSignatureException', 'the payload hash does not match the body');
  }
  const url = new URL(req.url ?? '/', 'http://127.0.0.1');
  const signer = new SignatureV4({
    credentials: { accessKeyId, secretAccessKey: caller.secretAccessKey },
    region,
    service,
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
    return fail('InvalidSignatureException', 'the request signature does not match');
  }
  return { ok: true, caller };
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
  const check = await verifySigV4(req, body, 'lambda', callers, now);
  if (!check.ok) return refuse(check.type, check.message);
  const { caller } = check;
  if (!caller.functions.includes(functionName)) {
    return refuse('AccessDeniedException', `this caller is not authorized to invoke ${functionName}`);
  }
  return { allowed: true, caller };
}
