import { InvokeCommand, type LambdaClient } from '@aws-sdk/client-lambda';
import type { CertificateIssuer, IssueCertificateInput, IssuedCertificate } from '../../../core/src';
import { CertificateAuthorityUnavailableError, CertificateRefusedError } from './errors';

/** What the CA function returns (see lambdas/handlers/ca). */
export type CaInvokeResult =
  | { ok: true; certificatePem: string; chainPem: string[]; serialHex: string }
  | { ok: false; error: { code: string; message: string } };

/**
 * The CertificateIssuer port over the Lambda Invoke API: the signer function asks the CA function, which
 * runs under its own role and its own HSM crypto user. The endpoint comes from configuration, so the
 * local runner's invoke server or LocalStack can stand in.
 */
export class LambdaCertificateIssuer implements CertificateIssuer {
  public constructor(
    private readonly client: LambdaClient,
    private readonly functionName: string,
  ) {}

  public async issue(input: IssueCertificateInput): Promise<IssuedCertificate> {
    const payload = JSON.stringify({
      requestId: input.requestId,
      csrDer: input.csrDer.toString('base64'),
      attemptId: input.attemptId,
    });
    let result: CaInvokeResult;
    try {
      const out = await this.client.send(
        new InvokeCommand({ FunctionName: this.functionName, Payload: Buffer.from(payload) }),
      );
      if (out.FunctionError) throw new Error(`CA function error ${out.FunctionError}`);
      result = JSON.parse(Buffer.from(out.Payload ?? []).toString('utf8')) as CaInvokeResult;
    } catch (err) {
      throw new CertificateAuthorityUnavailableError(`the CA could not be reached: ${(err as Error).name}`);
    }
    if (!result || typeof result !== 'object' || !('ok' in result)) {
      throw new CertificateAuthorityUnavailableError('the CA returned a malformed answer');
    }
    if (!result.ok) throw new CertificateRefusedError(result.error.code, result.error.message);
    return { certificatePem: result.certificatePem, chainPem: result.chainPem, serialHex: result.serialHex };
  }
}
