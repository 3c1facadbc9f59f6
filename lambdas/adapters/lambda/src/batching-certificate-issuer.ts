import type { LambdaClient } from '@aws-sdk/client-lambda';
import { Coalescer, type Settled } from '@pipeline/core/shared';
import {
  IssueBatchResponseSchema,
  issueBatchRequest,
  type CertificateIssuer,
  type IssueCertificateInput,
  type IssueItemResult,
  type IssuedCertificate,
} from '@pipeline/core/pki';
import { CertificateAuthorityUnavailableError, CertificateRefusedError } from './errors';
import { LambdaFunction } from './lambda-function';

/** A CA batch answer: one result per item, or the whole batch refused (IssueBatchResponseSchema and the like). */
interface BatchAnswerSchema<R> {
  safeParse(
    value: unknown,
  ):
    | { success: true; data: { results: R[] } | { ok: false; error: { code: string; message: string } } }
    | { success: false };
}

export interface BatchingIssuerOptions {
  /** Longest wait for more requests after the first one queued (ms). */
  readonly windowMs: number;
  /** Most items per invocation. */
  readonly maxBatch: number;
  /**
   * How many requests of this process could still join (attempts in flight): once all of them are
   * queued, nobody else is coming and the batch goes at once instead of waiting out the window.
   */
  readonly inFlight?: () => number;
}

/**
 * The CertificateIssuer port over the Lambda Invoke API, batched: the certificate requests of concurrent
 * attempts in this process go to the CA function as one `issue-batch` invocation (one read, one audit
 * entry and one write at the CA for all of them). Each caller still gets its own certificate or error.
 */
export class BatchingCertificateIssuer implements CertificateIssuer {
  private readonly batches: Coalescer<IssueCertificateInput, IssuedCertificate>;
  private readonly ca: LambdaFunction;

  public constructor(client: LambdaClient, functionName: string, options: BatchingIssuerOptions) {
    this.ca = new LambdaFunction(client, functionName);
    this.batches = new Coalescer((inputs) => this.send(inputs), {
      windowMs: options.windowMs,
      maxBatch: options.maxBatch,
      waiting: options.inFlight,
    });
  }

  public issue(input: IssueCertificateInput): Promise<IssuedCertificate> {
    return this.batches.submit(input);
  }

  /** One invocation; its per-item results, or the error every item of the batch gets. */
  private async invoke<R>(request: unknown, schema: BatchAnswerSchema<R>, items: number): Promise<R[]> {
    try {
      const out = await this.ca.invoke(request);
      if (out.functionError) throw new Error(`CA function error ${out.functionError}`);
      const parsed = schema.safeParse(JSON.parse(out.payload) as unknown);
      if (!parsed.success)
        throw new CertificateAuthorityUnavailableError('the CA returned a malformed answer');
      const body = parsed.data;
      if ('ok' in body) throw new CertificateRefusedError(body.error.code, body.error.message);
      if (body.results.length !== items) {
        throw new CertificateAuthorityUnavailableError('the CA returned a malformed answer');
      }
      return body.results;
    } catch (err) {
      throw err instanceof CertificateRefusedError || err instanceof CertificateAuthorityUnavailableError
        ? err
        : new CertificateAuthorityUnavailableError(`the CA could not be reached: ${(err as Error).name}`, {
            cause: err,
          });
    }
  }

  private async send(inputs: readonly IssueCertificateInput[]): Promise<Settled<IssuedCertificate>[]> {
    const results: IssueItemResult[] = await this.invoke(
      issueBatchRequest(inputs),
      IssueBatchResponseSchema,
      inputs.length,
    );
    return results.map((result) =>
      // The code decides (CA_UNAVAILABLE is retried by the signing core).
      result.ok
        ? {
            ok: true,
            value: {
              certificatePem: result.certificatePem,
              chainPem: result.chainPem,
              serialHex: result.serialHex,
              ...(result.ocspResponse ? { ocspResponse: result.ocspResponse } : {}),
            },
          }
        : { ok: false, error: new CertificateRefusedError(result.error.code, result.error.message) },
    );
  }
}
