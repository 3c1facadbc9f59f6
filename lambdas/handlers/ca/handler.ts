/**
 * The CA Lambda, issuance only: `{ action: 'issue-batch', items }` in (see core's ca-contract), one
 * certificate (released to the attempt that asked: the request gets no other but a takeover's one
 * replacement) or named refusal per item
 * out. Only the signer's role may invoke it; revocation is another
 * function (handlers/revoke) with another caller. The CA decides on evidence it verifies itself (the
 * identity assertion, the CSR) and on its own table, never on the request records. Configuration,
 * clients, the HSM login, the CA certificates and the identity providers' keys are set up once per
 * execution environment.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import { documentClient } from '@pipeline/adapters/aws';
import { CertificateRepository, LoggedCertificateRepository } from '@pipeline/adapters/dynamodb';
import {
  IssueBatchRequestSchema,
  IssueItemSchema,
  caRefusal,
  issueInputOf,
  issuedResult,
  type IssueBatchResponse,
  type IssueCertificateInput,
  type IssueItemResult,
  type IssueOutcome,
  type CaCertificates,
} from '@pipeline/core/pki';
import type { AppConfig, CaConfig, CaFunctionConfig } from '@pipeline/config';
import type { Hsm } from '@pipeline/adapters/hsm';
import { CertificateAuthority, OcspResponder } from '@pipeline/ca';
import { clientFailureOf, errorCode } from '@pipeline/core/shared';
import { createLogger } from '../shared/observability';
import { lambdaHandler, type LambdaHandler } from '../shared/middleware';
import { caSideLogin } from '../shared/ca-login';
import { auditLogSigningWith } from '../shared/audit-signing';
import { onceUntilFailure } from '../shared/once';
import { createEvidenceVerifier } from '../shared/evidence';

export interface CaHandlerDeps {
  /** The CA, set up on first use (HSM login, CA certificates); a failed set-up is tried again. */
  readonly authority: () => Promise<CertificateAuthority>;
  /** Never logs identities, assertions, CSRs or certificates: only request ids, serials and error codes. */
  readonly logger: Logger;
}

async function setUp(functionConfig: CaFunctionConfig, logger: Logger): Promise<CertificateAuthority> {
  // The CA keys belong to the CA's crypto user.
  const { hsm, caCertificates, config, aws } = await caSideLogin(functionConfig, (ca) => ({
    pinSource: ca.pinSource,
  }));
  const doc = documentClient(aws);
  const ocsp = await ocspAtIssuance(functionConfig, hsm, caCertificates, doc, logger);
  const certificates = new CertificateRepository(doc, { tableName: functionConfig.app.tables.certificates });
  // Appends, each head signed with the audit key shared with the CA's crypto user; never checkpoints.
  const audit = await auditLogSigningWith(doc, hsm, logger, {
    config: functionConfig.audit,
    tableName: functionConfig.app.tables.audit,
  });
  return CertificateAuthority.create({
    hsm,
    certificates,
    caCertificates,
    config,
    evidence: createEvidenceVerifier(functionConfig.identity, aws),
    audit,
    // Each certificate and the audit entry of its event in one transaction, no read first.
    logged: new LoggedCertificateRepository(certificates, audit),
    // Read back for a takeover's replacement: no signature made with the certificate it would supersede.
    signatures: audit,
    ...(ocsp ? { ocspAtIssuance: ocsp } : {}),
  });
}

/**
 * The OCSP responder's key as the CA reaches it, to return each new certificate with its OCSP response
 * `good` (the signer then needs no call to the responder for B-LT). On CloudHSM the key is shared with
 * the CA's crypto user (the OCSP login is the CA's own: the function's OCSP variables default to it);
 * locally, where SoftHSM has one user per token, the CA logs in to the responder's token. Without the key
 * the certificates go without a response and the signer asks the responder.
 */
async function ocspAtIssuance(
  functionConfig: { readonly app: AppConfig; readonly ca: CaConfig },
  caHsm: Hsm,
  caCertificates: CaCertificates,
  doc: ReturnType<typeof documentClient>,
  logger: Logger,
): Promise<((serialHex: string) => Promise<Buffer>) | undefined> {
  const { app, ca: config } = functionConfig;
  const own =
    JSON.stringify(config.ocspPinSource) === JSON.stringify(config.pinSource) &&
    config.ocspTokenLabel === app.hsm.tokenLabel;
  try {
    const hsm = own
      ? caHsm
      : (
          await caSideLogin(functionConfig, (ca) => ({
            pinSource: ca.ocspPinSource,
            tokenLabel: ca.ocspTokenLabel,
          }))
        ).hsm;
    const responder = await OcspResponder.create({
      hsm,
      store: new CertificateRepository(doc, { tableName: app.tables.certificates }),
      caCertificates,
      config,
      publishedCrl: () => Promise.resolve(undefined),
    });
    return (serialHex) => responder.goodAtIssuance(serialHex);
  } catch (err) {
    logger.warn('OCSP key unavailable to the CA: B-LT responses come from the responder', {
      errorName: (err as Error)?.name,
    });
    return undefined;
  }
}

/** A checked item, or the refusal it gets without reaching the CA. */
function parseItem(
  item: unknown,
  logger: Logger,
): { ok: true; input: IssueCertificateInput } | { ok: false; result: IssueItemResult } {
  const parsed = IssueItemSchema.safeParse(item);
  if (!parsed.success) {
    const requestId = (item as { requestId?: unknown } | undefined)?.requestId;
    logger.warn('certificate refused', {
      requestId: typeof requestId === 'string' ? requestId.slice(0, 64) : undefined,
      code: 'BAD_CERTIFICATE_REQUEST',
    });
    return {
      ok: false,
      result: caRefusal(
        'BAD_CERTIFICATE_REQUEST',
        `the certificate request is malformed: ${parsed.error.issues[0]?.path.join('.') || 'item'}`,
      ),
    };
  }
  return { ok: true, input: issueInputOf(parsed.data) };
}

/**
 * The answer for one item: the certificate, a named refusal (what the core's mapping calls refused, with
 * the error's own code: the signer decides what its client sees), or CA_UNAVAILABLE (worth a retry).
 */
function resultOf(requestId: string, outcome: IssueOutcome, logger: Logger): IssueItemResult {
  if (outcome.ok) {
    logger.info('certificate issued', { requestId, serialHex: outcome.certificate.serialHex });
    return issuedResult(outcome.certificate);
  }
  const err = outcome.error;
  const failure = clientFailureOf(err);
  if (failure.kind === 'refused') {
    const code = errorCode(err);
    logger.warn('certificate refused', { requestId, code });
    return caRefusal(code, failure.message);
  }
  logger.error('certificate issuance failed', { requestId, errorName: (err as Error)?.name });
  return caRefusal('CA_UNAVAILABLE', 'the CA could not issue a certificate now; retry later');
}

export function createCaHandler({
  authority,
  logger,
}: CaHandlerDeps): LambdaHandler<unknown, IssueBatchResponse> {
  return lambdaHandler(
    async (event: unknown): Promise<IssueBatchResponse> => {
      const batch = IssueBatchRequestSchema.safeParse(event);
      if (!batch.success) {
        return caRefusal('BAD_BATCH', 'expected { action: "issue-batch", items: [1..100] }');
      }
      const parsed = batch.data.items.map((item) => parseItem(item, logger));
      const inputs = parsed.flatMap((p) => (p.ok ? [p.input] : []));
      let outcomes: IssueOutcome[];
      try {
        const ca = await authority();
        outcomes = inputs.length > 0 ? await ca.issueMany(inputs) : [];
      } catch (error) {
        outcomes = inputs.map(() => ({ ok: false, error }));
      }
      let k = 0;
      return {
        results: parsed.map((p) => (p.ok ? resultOf(p.input.requestId, outcomes[k++], logger) : p.result)),
      };
    },
    { logger },
  );
}

/** The CA's dependencies from configuration: set up lazily, once per execution environment. */
export function wireCa(config: CaFunctionConfig): CaHandlerDeps {
  const logger = createLogger('ca');
  return { authority: onceUntilFailure(() => setUp(config, logger)), logger };
}
