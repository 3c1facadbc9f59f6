/**
 * A DSS-Ext door's request (SubmitCall.tasks): no wire format, the door's own word as typed values. Its sign
 * tasks become `dss-task` documents whose digests the login's manifest binds, and its evidence (the
 * SignRequest with the assertion, core identity/dss-evidence.ts) is the identity assertion.
 */
import {
  DIGEST_ALGORITHMS,
  KEY_TYPES,
  SIGNATURE_ALGORITHMS,
  fits,
  type DigestAlgorithm,
  type KeyType,
  type SignatureAlgorithm,
} from '@pipeline/core/shared';
import { signTaskDigest, type SignDocument, type SignTaskData } from '@pipeline/core/signing';
import { isDssEvidence, manifestHash, MAX_DOCUMENTS, MAX_DSS_EVIDENCE_LENGTH } from '@pipeline/core/identity';
import { ValidationError } from './errors';
import type { SignRequestInput } from './types';
import { isRequestId } from './validate';

/** What a DSS-Ext door submits. */
export interface TaskSubmission {
  readonly requestId: string;
  readonly keyType: KeyType;
  readonly signatureAlgorithm: SignatureAlgorithm;
  readonly digestAlgorithm: DigestAlgorithm;
  readonly tasks: readonly SignTaskData[];
  readonly evidence: string;
}

/** The task bytes of a request together: its record (with the evidence) stays within DynamoDB's 400 KB. */
const MAX_TASK_BYTES = 192 * 1024;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const SIG_TYPES = ['XML', 'PDF', 'CMS'];
const ADES_TYPES = ['None', 'BES', 'EPES'];

export function parseTaskSubmission(submission: TaskSubmission): SignRequestInput {
  const { requestId, keyType, signatureAlgorithm, digestAlgorithm, tasks, evidence } = submission;
  if (!isRequestId(requestId)) throw new ValidationError('requestId must be a UUID');
  if (
    !KEY_TYPES.includes(keyType) ||
    !SIGNATURE_ALGORITHMS.includes(signatureAlgorithm) ||
    !fits(keyType, signatureAlgorithm)
  ) {
    throw new ValidationError('keyType and signatureAlgorithm must fit together');
  }
  if (!DIGEST_ALGORITHMS.includes(digestAlgorithm))
    throw new ValidationError('digestAlgorithm is not supported');
  if (!isDssEvidence(evidence) || evidence.length > MAX_DSS_EVIDENCE_LENGTH) {
    throw new ValidationError(
      `the evidence must be a DSS-Ext token of at most ${MAX_DSS_EVIDENCE_LENGTH} characters`,
    );
  }
  if (tasks.length < 1 || tasks.length > MAX_DOCUMENTS) {
    throw new ValidationError(`a request has 1 to ${MAX_DOCUMENTS} sign tasks`);
  }
  let bytes = 0;
  const documents: SignDocument[] = tasks.map((task, i) => {
    const fields = [task.toBeSigned, task.adesObject ?? ''];
    if (
      !SIG_TYPES.includes(task.sigType) ||
      !ADES_TYPES.includes(task.adesType) ||
      fields.some((f) => !BASE64.test(f))
    ) {
      throw new ValidationError(`tasks[${i}] is not a sign task`);
    }
    if (task.toBeSigned === '' || (task.signatureId !== undefined && task.signatureId.length > 256)) {
      throw new ValidationError(`tasks[${i}] is not a sign task`);
    }
    bytes += fields.reduce((n, f) => n + f.length, 0);
    return { digestAlgorithm, digest: signTaskDigest(task, digestAlgorithm), format: 'dss-task', task };
  });
  if (bytes > MAX_TASK_BYTES)
    throw new ValidationError(`the sign tasks exceed ${MAX_TASK_BYTES} bytes of base64`);
  return {
    requestId: requestId.toLowerCase(),
    documents,
    digest: Buffer.from(manifestHash(documents), 'base64url').toString('base64'),
    digestAlgorithm: 'SHA-256',
    keyType,
    signatureAlgorithm,
    identityAssertion: evidence,
  };
}
