import { InvokeCommand, type LambdaClient } from '@aws-sdk/client-lambda';
import type { CertificateIssuer, IssueCertificateInput, IssuedCertificate } from '../../../core/src';
import { CertificateAuthorityUnavailableError, CertificateRefusedError } from './errors';
import type { CaInvokeResult } from './lambda-certificate-issuer';

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

interface Waiting {
  readonly input: IssueCertificateInput;
  readonly resolve: (issued: IssuedCertificate) => void;
  readonly reject: (err: unknown) => void;
}

/**
 * The CertificateIssuer port over the Lambda Invoke API, batched: the certificate requests of concurrent
 * attempts in this process go to the CA function as one `issue-batch` invocation (one read, one audit
 * entry and one write at the CA for all of them). Each caller still gets its own certificate or error.
 */
export class BatchingCertificateIssuer implements CertificateIssuer {
  private queue: Waiting[] = [];
  private timer: NodeJS.Timeout | undefined;

  public constructor(
    private readonly client: LambdaClient,
    private readonly functionName: string,
    private readonly options: BatchingIssuerOptions,
  ) {}

  public issue(input: IssueCertificateInput): Promise<IssuedCertificate> {
    return new Promise((resolve, reject) => {
      this.queue.push({ input, resolve, reject });
      const everyone = this.options.inFlight !== undefined && this.queue.length >= this.options.inFlight();
      if (this.queue.length >= this.options.maxBatch || everyone || this.options.windowMs <= 0) this.flush();
      else this.timer ??= setTimeout(() => this.flush(), this.options.windowMs);
    });
  }

  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, this.options.maxBatch);
      void this.send(batch);
    }
  }

  private async send(batch: readonly Waiting[]): Promise<void> {
    const payload = JSON.stringify({
      action: 'issue-batch',
      items: batch.map(({ input }) => ({
        requestId: input.requestId,
        csrDer: input.csrDer.toString('base64'),
        attemptId: input.attemptId,
      })),
    });
    let results: CaInvokeResult[];
    try {
      const out = await this.client.send(
        new InvokeCommand({ FunctionName: this.functionName, Payload: Buffer.from(payload) }),
      );
      if (out.FunctionError) throw new Error(`CA function error ${out.FunctionError}`);
      const body = JSON.parse(Buffer.from(out.Payload ?? []).toString('utf8')) as {
        results?: CaInvokeResult[];
      } & Partial<CaInvokeResult>;
      if (body.ok === false) throw new CertificateRefusedError(body.error!.code, body.error!.message);
      if (!Array.isArray(body.results) || body.results.length !== batch.length) {
        throw new CertificateAuthorityUnavailableError('the CA returned a malformed answer');
      }
      results = body.results;
    } catch (err) {
      const error =
        err instanceof CertificateRefusedError || err instanceof CertificateAuthorityUnavailableError
          ? err
          : new CertificateAuthorityUnavailableError(`the CA could not be reached: ${(err as Error).name}`);
      for (const w of batch) w.reject(error);
      return;
    }
    batch.forEach((w, i) => {
      const result = results[i];
      if (!result || typeof result !== 'object' || !('ok' in result)) {
        w.reject(new CertificateAuthorityUnavailableError('the CA returned a malformed answer'));
      } else if (!result.ok) {
        // As on the single path: the code decides (CA_UNAVAILABLE is retried by the signing core).
        w.reject(new CertificateRefusedError(result.error.code, result.error.message));
      } else {
        w.resolve({
          certificatePem: result.certificatePem,
          chainPem: result.chainPem,
          serialHex: result.serialHex,
        });
      }
    });
  }
}
