/**
 * The CA Lambda: `{ requestId, csrDer (base64) }` in, a certificate and chain (or a named refusal) out;
 * `{ action: 'issue-batch', items }` in, one such result per item out (the signer's batches: one read,
 * one audit entry and one write for all of them); or `{ action: 'revoke', serial, reason, requestedBy }`
 * in, the revocation out. Invoked by the signer
 * (certificates) and the API (revocations) through the Lambda Invoke API: the CA is the only writer of the
 * certificate records. After a revocation it starts the CRL publication asynchronously. Configuration,
 * clients, the HSM login and the CA certificates are set up once per execution environment.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import type { Context } from 'aws-lambda';
import { InvokeCommand } from '@aws-sdk/client-lambda';
import { documentClient, lambdaClient } from '../../adapters/aws/src';
import { CertificateRepository } from '../../adapters/dynamodb/src/certificate-repository';
import { RequestRepository } from '../../adapters/dynamodb/src/request-repository';
import { connectHsm } from '../../adapters/hsm/src';
import { createAuditLog } from '../../audit/src';
import {
  InvalidIdentityError,
  SerialCollisionError,
  isRevocationReason,
  type IssueCertificateInput,
  type IssueOutcome,
  type RevokeOutcome,
} from '../../core/src';
import { loadCaConfig, loadConfig } from '../../config/src';
import { PkiError } from '../../pki/src';
import { TABLES, tableName } from '../../resources/src';
import { CaError, CertificateAuthority, caCertificateStore, revokeCertificate } from '../../ca/src';
import type { AuditSink } from '../../core/src';

export interface CaEvent {
  readonly requestId: string;
  /** PKCS#10 CSR, DER, base64. */
  readonly csrDer: string;
  /** The signer attempt that owns the request (see IssueCertificateInput.attemptId). */
  readonly attemptId?: string;
}

/** Certify many keys in one invocation (the signer's batches): one result per item, in order. */
export interface IssueBatchEvent {
  readonly action: 'issue-batch';
  readonly items: readonly CaEvent[];
}

export interface IssueBatchResult {
  readonly results: CaResult[];
}

/** Items per batch invocation: a batch of CSRs and certificates stays far below Lambda's 6 MB payload. */
export const MAX_BATCH_ITEMS = 100;

/** Revoke a serial; `requestedBy` names who asked (an API client, for the record and the audit). */
export interface RevokeEvent {
  readonly action: 'revoke';
  readonly serial: string;
  readonly reason: string;
  readonly requestedBy: string;
}

export type RevokeResult =
  | {
      readonly ok: true;
      readonly outcome: 'revoked' | 'already-revoked';
      readonly serialHex: string;
      readonly reason: string;
      /** Epoch ms. */
      readonly revokedAt: number;
    }
  | { readonly ok: false; readonly error: { readonly code: string; readonly message: string } };

export type CaResult =
  | {
      readonly ok: true;
      readonly certificatePem: string;
      readonly chainPem: string[];
      readonly serialHex: string;
    }
  | { readonly ok: false; readonly error: { readonly code: string; readonly message: string } };

/** Never logs identities, CSRs or certificates: only request ids, serials and error codes. */
const logger = new Logger({ serviceName: 'ca' });

/** An RSA-4096 CSR is about 1.2 kB; base64 of 8 kB is plenty. */
const MAX_CSR_BASE64 = 11_000;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

interface CaContext {
  readonly ca: CertificateAuthority;
  readonly certificates: CertificateRepository;
  readonly audit: AuditSink;
  /** Starts the CRL publication (asynchronous invoke): a revocation shows in the CRL within seconds. */
  readonly publish: () => Promise<void>;
}

let ready: Promise<CaContext> | undefined;

async function setUp(): Promise<CaContext> {
  const config = loadConfig();
  const ca = loadCaConfig();
  const doc = documentClient(config.aws);
  // The CA keys belong to the CA's crypto user, whose PIN may differ from the signer's.
  const hsm = await connectHsm({ ...config.hsm, pinSource: ca.pinSource }, config.aws);
  const caCertificates = await caCertificateStore(ca.certsSource, config.aws).read();
  if (!caCertificates) {
    await hsm.close();
    throw new Error(`no CA certificates in ${ca.certsSource.kind}`);
  }
  const certificates = new CertificateRepository(doc, { tableName: tableName(TABLES.certificates) });
  // Appends only: the CA's crypto user does not hold the audit key, so it never signs checkpoints.
  const audit = await createAuditLog({ doc });
  const lambda = lambdaClient(config.aws);
  return {
    ca: await CertificateAuthority.create({
      hsm,
      requests: new RequestRepository(doc, { tableName: tableName(TABLES.requests) }),
      certificates,
      caCertificates,
      config: ca,
      audit,
    }),
    certificates,
    audit,
    publish: async () => {
      await lambda.send(new InvokeCommand({ FunctionName: ca.crlFunctionName, InvocationType: 'Event' }));
    },
  };
}

/** Lazily, once; a failed set-up is tried again on the next invocation. */
function certificateAuthority(): Promise<CaContext> {
  ready ??= setUp().catch((err: unknown) => {
    ready = undefined;
    throw err;
  });
  return ready;
}

function refusal(code: string, message: string): { ok: false; error: { code: string; message: string } } {
  return { ok: false, error: { code, message } };
}

export async function handler(event: RevokeEvent, context?: Context): Promise<RevokeResult>;
export async function handler(
  event: IssueBatchEvent,
  context?: Context,
): Promise<IssueBatchResult | CaResult>;
export async function handler(event: CaEvent, context?: Context): Promise<CaResult>;
export async function handler(
  event: CaEvent | RevokeEvent | IssueBatchEvent,
  context?: Context,
): Promise<CaResult | RevokeResult | IssueBatchResult> {
  // Every log line of the invocation carries the Lambda context (function, request id, cold start).
  if (context) logger.addContext(context);
  const action = (event as { action?: unknown } | undefined)?.action;
  if (action === 'revoke') return revoke(event as RevokeEvent);
  if (action === 'issue-batch') return issueBatch(event as IssueBatchEvent);
  return issue(event as CaEvent);
}

async function revoke(event: RevokeEvent): Promise<RevokeResult> {
  const requestedBy = typeof event.requestedBy === 'string' ? event.requestedBy.slice(0, 256) : '';
  if (!isRevocationReason(event.reason) || typeof event.serial !== 'string' || !requestedBy) {
    return refusal('BAD_REVOCATION', 'a revocation needs a serial, an RFC 5280 reason and who asks');
  }
  let outcome: RevokeOutcome;
  try {
    const context = await certificateAuthority();
    outcome = await revokeCertificate(
      { store: context.certificates, audit: context.audit },
      event.serial,
      event.reason,
      requestedBy,
    );
    if (outcome.outcome === 'revoked') {
      // Not awaited for its result: the schedule publishes anyway; a failed start only delays the CRL.
      await context
        .publish()
        .catch((err: unknown) =>
          logger.warn('CRL publication not started', { errorName: (err as Error)?.name }),
        );
    }
  } catch (err) {
    logger.error('revocation failed', { errorName: (err as Error)?.name });
    return refusal('CA_UNAVAILABLE', 'the CA could not revoke now; retry later');
  }
  if (outcome.outcome === 'unknown') return refusal('CERTIFICATE_UNKNOWN', 'no certificate with this serial');
  const revocation = outcome.status.revocation!;
  logger.info('certificate revoked', {
    serialHex: outcome.status.serialHex,
    outcome: outcome.outcome,
    reason: revocation.reason,
    requestedBy,
  });
  return {
    ok: true,
    outcome: outcome.outcome,
    serialHex: outcome.status.serialHex,
    reason: revocation.reason,
    revokedAt: revocation.revokedAt,
  };
}

/** A checked item: its request id and CSR, or the refusal it gets without reaching the CA. */
function parseItem(
  event: CaEvent,
): { ok: true; input: IssueCertificateInput } | { ok: false; result: CaResult } {
  const requestId = typeof event?.requestId === 'string' ? event.requestId.slice(0, 256) : '';
  const csr = event?.csrDer;
  if (typeof csr !== 'string' || csr.length > MAX_CSR_BASE64 || !BASE64.test(csr)) {
    logger.warn('certificate refused', { requestId, code: 'BAD_CSR' });
    return { ok: false, result: refusal('BAD_CSR', 'csrDer must be a base64 DER PKCS#10 request') };
  }
  const attemptId =
    typeof event.attemptId === 'string' && event.attemptId.length <= 64 ? event.attemptId : undefined;
  return { ok: true, input: { requestId, csrDer: Buffer.from(csr, 'base64'), attemptId } };
}

/** The answer for one item: the certificate, a named refusal, or CA_UNAVAILABLE (worth a retry). */
function resultOf(requestId: string, outcome: IssueOutcome): CaResult {
  if (outcome.ok) {
    logger.info('certificate issued', { requestId, serialHex: outcome.certificate.serialHex });
    return { ok: true, ...outcome.certificate, chainPem: [...outcome.certificate.chainPem] };
  }
  const err = outcome.error;
  if (
    err instanceof CaError ||
    err instanceof PkiError ||
    err instanceof InvalidIdentityError ||
    err instanceof SerialCollisionError
  ) {
    logger.warn('certificate refused', { requestId, code: err.code });
    return refusal(err.code, err.message);
  }
  logger.error('certificate issuance failed', { requestId, errorName: (err as Error)?.name });
  return refusal('CA_UNAVAILABLE', 'the CA could not issue a certificate now; retry later');
}

async function issue(event: CaEvent): Promise<CaResult> {
  const item = parseItem(event);
  if (!item.ok) return item.result;
  const outcome = await certificateAuthority()
    .then(({ ca }) => ca.issue(item.input))
    .then(
      (certificate): IssueOutcome => ({ ok: true, certificate }),
      (error: unknown): IssueOutcome => ({ ok: false, error }),
    );
  return resultOf(item.input.requestId, outcome);
}

async function issueBatch(event: IssueBatchEvent): Promise<IssueBatchResult | CaResult> {
  const items = event.items;
  if (!Array.isArray(items) || items.length === 0 || items.length > MAX_BATCH_ITEMS) {
    return refusal('BAD_BATCH', `a batch holds 1 to ${MAX_BATCH_ITEMS} items`);
  }
  const parsed = items.map(parseItem);
  const inputs = parsed.flatMap((p) => (p.ok ? [p.input] : []));
  let outcomes: IssueOutcome[];
  try {
    const { ca } = await certificateAuthority();
    outcomes = inputs.length > 0 ? await ca.issueMany(inputs) : [];
  } catch (error) {
    outcomes = inputs.map(() => ({ ok: false, error }));
  }
  let k = 0;
  return {
    results: parsed.map((p) => (p.ok ? resultOf(p.input.requestId, outcomes[k++]) : p.result)),
  };
}
