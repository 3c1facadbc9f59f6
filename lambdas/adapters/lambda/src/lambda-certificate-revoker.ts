import type { LambdaClient } from '@aws-sdk/client-lambda';
import {
  REVOCATION_REFUSALS,
  RegisterResponseSchema,
  RevokeResponseSchema,
  type RevocationReason,
  type RevokeRequest,
} from '@pipeline/core/pki';
import type { AuditReceipt } from '@pipeline/core/audit';
import type { CertificateRevoker } from '@pipeline/core/signing';
import { CertificateAuthorityUnavailableError, CertificateRefusedError } from './errors';
import { LambdaFunction } from './lambda-function';

/** A revocation done (now or before: `already-revoked` keeps the first one's time and reason). */
export interface Revoked {
  readonly outcome: 'revoked' | 'already-revoked';
  readonly serialHex: string;
  readonly reason: RevocationReason;
  readonly revokedAt: number;
  /** A new revocation's audit receipt (its head signed when the revocation function reached the audit key). */
  readonly receipt?: AuditReceipt;
}

/**
 * Revocations through the revocation function (see core's ca-contract), the only writer of revocations:
 * the API's and the operators' way to revoke. Operators name a serial; the API names a request id and the
 * client that asks, and the function revokes what the CA recorded for them. The endpoint comes from
 * configuration.
 */
export class LambdaCertificateRevoker implements CertificateRevoker {
  private readonly revocation: LambdaFunction;

  public constructor(client: LambdaClient, functionName: string) {
    this.revocation = new LambdaFunction(client, functionName);
  }

  /** An operator's revocation of a serial; throws CertificateRefusedError with the function's code. */
  public async revoke(serialHex: string, reason: RevocationReason, requestedBy: string): Promise<Revoked> {
    return this.revoked(await this.send({ action: 'revoke', serial: serialHex, reason, requestedBy }));
  }

  /**
   * A client's revocation of its request's certificate: `not-owned` when the CA has the request id as
   * another client's (or as nobody's), `unknown` when it issued no certificate for it.
   */
  public async revokeRequest(
    requestId: string,
    reason: RevocationReason,
    client: string,
  ): Promise<Revoked | { readonly outcome: 'not-owned' } | { readonly outcome: 'unknown' }> {
    const answer = await this.send({ action: 'revoke-request', requestId, client, reason });
    const refused = refusalCode(answer);
    if (refused === REVOCATION_REFUSALS.notOwned) return { outcome: 'not-owned' };
    if (refused === REVOCATION_REFUSALS.unknown) return { outcome: 'unknown' };
    return this.revoked(answer);
  }

  /**
   * Retires a one-time credential never used (its creating request's certificate revoked
   * `cessationOfOperation`): `used` when the CA released it to a request, `unknown` without a certificate.
   */
  public async retireCredential(
    requestId: string,
    requestedBy: string,
  ): Promise<Revoked | { readonly outcome: 'used' } | { readonly outcome: 'unknown' }> {
    const answer = await this.send({ action: 'retire-credential', requestId, requestedBy });
    const refused = refusalCode(answer);
    if (refused === REVOCATION_REFUSALS.used) return { outcome: 'used' };
    if (refused === REVOCATION_REFUSALS.unknown) return { outcome: 'unknown' };
    return this.revoked(answer);
  }

  /** Records the request id as the client's with the CA; false when another client has it. */
  public async registerRequestOwner(requestId: string, client: string): Promise<boolean> {
    const parsed = RegisterResponseSchema.safeParse(
      await this.send({ action: 'register-request', requestId, client }),
    );
    if (!parsed.success) throw new CertificateAuthorityUnavailableError('the CA returned a malformed answer');
    if (parsed.data.ok) return true;
    if (parsed.data.error.code === REVOCATION_REFUSALS.taken) return false;
    throw new CertificateRefusedError(parsed.data.error.code, parsed.data.error.message);
  }

  private revoked(answer: unknown): Revoked {
    const parsed = RevokeResponseSchema.safeParse(answer);
    if (!parsed.success) throw new CertificateAuthorityUnavailableError('the CA returned a malformed answer');
    const result = parsed.data;
    if (!result.ok) throw new CertificateRefusedError(result.error.code, result.error.message);
    return {
      outcome: result.outcome,
      serialHex: result.serialHex,
      reason: result.reason,
      revokedAt: result.revokedAt,
      ...(result.receipt ? { receipt: result.receipt } : {}),
    };
  }

  private async send(request: RevokeRequest): Promise<unknown> {
    try {
      const out = await this.revocation.invoke(request);
      if (out.functionError) throw new Error(`CA function error ${out.functionError}`);
      return JSON.parse(out.payload) as unknown;
    } catch (err) {
      throw new CertificateAuthorityUnavailableError(`the CA could not be reached: ${(err as Error).name}`, {
        cause: err,
      });
    }
  }
}

function refusalCode(answer: unknown): string | undefined {
  const a = answer as { ok?: unknown; error?: { code?: unknown } } | undefined;
  return a?.ok === false && typeof a.error?.code === 'string' ? a.error.code : undefined;
}
