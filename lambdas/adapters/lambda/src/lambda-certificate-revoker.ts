import type { LambdaClient } from '@aws-sdk/client-lambda';
import {
  RevokeResponseSchema,
  type RevocationReason,
  type RevokeRequest,
  type RevokeResponse,
} from '@pipeline/core';
import { CertificateAuthorityUnavailableError, CertificateRefusedError } from './errors';
import { LambdaFunction } from './lambda-function';

/**
 * Revocations through the revocation function (see core's ca-contract), the only writer of revocations:
 * the API's and the operators' way to revoke. The endpoint comes from configuration.
 */
export class LambdaCertificateRevoker {
  private readonly revocation: LambdaFunction;

  public constructor(client: LambdaClient, functionName: string) {
    this.revocation = new LambdaFunction(client, functionName);
  }

  public async revoke(serialHex: string, reason: RevocationReason, requestedBy: string) {
    const request: RevokeRequest = { action: 'revoke', serial: serialHex, reason, requestedBy };
    let result: RevokeResponse;
    try {
      const out = await this.revocation.invoke(request);
      if (out.functionError) throw new Error(`CA function error ${out.functionError}`);
      const parsed = RevokeResponseSchema.safeParse(JSON.parse(out.payload) as unknown);
      if (!parsed.success)
        throw new CertificateAuthorityUnavailableError('the CA returned a malformed answer');
      result = parsed.data;
    } catch (err) {
      if (err instanceof CertificateAuthorityUnavailableError) throw err;
      throw new CertificateAuthorityUnavailableError(`the CA could not be reached: ${(err as Error).name}`, {
        cause: err,
      });
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
