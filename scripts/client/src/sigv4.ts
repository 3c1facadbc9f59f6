/**
 * AWS Signature Version 4 for calls to the signing API (service `execute-api`), with Node's crypto as the
 * hash: on AWS every e-service signs with its IAM credentials, locally with the credentials the runner
 * made for its client. The runner's endpoints verify with the same code (scripts/local/runner/invoke-auth.ts).
 */
import { createHash, createHmac, type Hash, type Hmac } from 'node:crypto';
import { SignatureV4 } from '@smithy/signature-v4';

export interface SigV4Credentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
}

/** The SHA-256 the signer needs, from Node's crypto (HMAC when given a secret). */
export class NodeSha256 {
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

/**
 * The headers that sign one API request (Authorization, X-Amz-Date, X-Amz-Content-Sha256), to send along
 * with `headers`; `region` as the API's (any for the local gateway).
 */
export async function signApiRequest(
  credentials: SigV4Credentials,
  request: {
    readonly url: string;
    readonly method: string;
    readonly headers: Record<string, string>;
    readonly body?: string;
  },
  region = process.env.AWS_REGION ?? 'eu-north-1',
): Promise<Record<string, string>> {
  const url = new URL(request.url);
  const signer = new SignatureV4({ credentials, region, service: 'execute-api', sha256: NodeSha256 });
  const signed = await signer.sign({
    method: request.method,
    protocol: url.protocol,
    hostname: url.hostname,
    port: url.port ? Number(url.port) : undefined,
    path: url.pathname,
    query: Object.fromEntries(url.searchParams),
    headers: { ...request.headers, host: url.host },
    body: request.body ?? '',
  });
  // fetch sets Host itself (from the URL, as signed).
  return Object.fromEntries(
    Object.entries(signed.headers)
      .filter(([k]) => k.toLowerCase() !== 'host')
      .map(([k, v]) => [k, String(v)]),
  );
}
