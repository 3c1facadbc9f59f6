/**
 * The CA Lambda: `{ requestId, csrDer (base64) }` in, a certificate and chain (or a named refusal) out.
 * Invoked by the signer through the Lambda Invoke API. Configuration, clients, the HSM login and the CA
 * certificates are set up once per execution environment, outside the handler.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { documentClient } from '../../adapters/aws/src';
import { CertificateRepository } from '../../adapters/dynamodb/src/certificate-repository';
import { RequestRepository } from '../../adapters/dynamodb/src/request-repository';
import { connectHsm } from '../../adapters/hsm/src';
import { createAuditLog } from '../../audit/src';
import { InvalidIdentityError } from '../../core/src';
import { loadCaConfig, loadConfig } from '../../config/src';
import { PkiError } from '../../pki/src';
import { TABLES, tableName } from '../../resources/src';
import { CaError, CertificateAuthority, caCertificateStore } from '../../ca/src';

export interface CaEvent {
  readonly requestId: string;
  /** PKCS#10 CSR, DER, base64. */
  readonly csrDer: string;
  /** The signer attempt that owns the request (see IssueCertificateInput.attemptId). */
  readonly attemptId?: string;
}

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

let ready: Promise<CertificateAuthority> | undefined;

async function setUp(): Promise<CertificateAuthority> {
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
  return CertificateAuthority.create({
    hsm,
    requests: new RequestRepository(doc, { tableName: tableName(TABLES.requests) }),
    certificates: new CertificateRepository(doc, { tableName: tableName(TABLES.certificates) }),
    caCertificates,
    config: ca,
    // Appends only: the CA's crypto user does not hold the audit key, so it never signs checkpoints.
    audit: await createAuditLog({ doc }),
  });
}

/** Lazily, once; a failed set-up is tried again on the next invocation. */
function certificateAuthority(): Promise<CertificateAuthority> {
  ready ??= setUp().catch((err: unknown) => {
    ready = undefined;
    throw err;
  });
  return ready;
}

function refusal(code: string, message: string): CaResult {
  return { ok: false, error: { code, message } };
}

export async function handler(event: CaEvent): Promise<CaResult> {
  const requestId = typeof event?.requestId === 'string' ? event.requestId.slice(0, 256) : undefined;
  const csr = event?.csrDer;
  if (typeof csr !== 'string' || csr.length > MAX_CSR_BASE64 || !BASE64.test(csr)) {
    logger.warn('certificate refused', { requestId, code: 'BAD_CSR' });
    return refusal('BAD_CSR', 'csrDer must be a base64 DER PKCS#10 request');
  }
  try {
    const ca = await certificateAuthority();
    // Attempt ids are UUIDs; anything else is ignored (and then cannot replace a certificate).
    const attemptId =
      typeof event.attemptId === 'string' && event.attemptId.length <= 64 ? event.attemptId : undefined;
    const issued = await ca.issue({
      requestId: requestId ?? '',
      csrDer: Buffer.from(csr, 'base64'),
      attemptId,
    });
    logger.info('certificate issued', { requestId, serialHex: issued.serialHex });
    return { ok: true, ...issued, chainPem: [...issued.chainPem] };
  } catch (err) {
    if (err instanceof CaError || err instanceof PkiError || err instanceof InvalidIdentityError) {
      logger.warn('certificate refused', { requestId, code: err.code });
      return refusal(err.code, err.message);
    }
    // Unknown failures (HSM, DynamoDB, set-up): name only, as their messages are not ours to vouch for.
    logger.error('certificate issuance failed', { requestId, errorName: (err as Error)?.name });
    return refusal('CA_UNAVAILABLE', 'the CA could not issue a certificate now; retry later');
  }
}
