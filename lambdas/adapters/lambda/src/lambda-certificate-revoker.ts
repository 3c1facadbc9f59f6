import { InvokeCommand, type LambdaClient } from '@aws-sdk/client-lambda';
import type { RevocationReason } from '../../../core/src';
import { CertificateAuthorityUnavailableError, CertificateRefusedError } from './errors';

/** What the CA function answers to a revocation (see lambdas/handlers/ca). */
type RevokeInvokeResult =
  | {
      ok: true;
      outcome: 'revoked' | 'already-revoked';
      serialHex: string;
      reason: string;
      revokedAt: number;
    }
  | { ok: false; error: { code: string; message: string } };

/** Revocations through the CA function, the only writer of certificate records (Lambda Invoke). */
export class LambdaCertificateRevoker {
  public constructor(
    private readonly client: LambdaClient,
    private readonly functionName: string,
  ) {}

  public async revoke(serialHex: string, reason: RevocationReason, requestedBy: string) {
    let result: RevokeInvokeResult;
    try {
      const out = await this.client.send(
        new InvokeCommand({
          FunctionName: this.functionName,
          Payload: Buffer.from(JSON.stringify({ action: 'revoke', serial: serialHex, reason, requestedBy })),
        }),
      );
      if (out.FunctionError) throw new Error(`CA function error ${out.FunctionError}`);
      result = JSON.parse(Buffer.from(out.Payload ?? []).toString('utf8')) as RevokeInvokeResult;
    } catch (err) {
      throw new CertificateAuthorityUnavailableError(`the CA could not be reached: ${(err as Error).name}`);
    }
    if (!result || typeof result !== 'object' || !('ok' in result)) {
      throw new CertificateAuthorityUnavailableError('the CA returned a malformed answer');
    }
    if (!result.ok) throw new CertificateRefusedError(result.error.code, result.error.message);
    return {
      outcome: result.outcome,
      serialHex: result.serialHex,
      reason: result.reason,
      revokedAt: result.revokedAt,
    };
  }
}
