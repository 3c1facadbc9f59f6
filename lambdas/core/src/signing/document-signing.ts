/**
 * The signatures of one request: every request is a list of documents inside the service (a request with
 * the single document's fields is a list of one; its stored record, result and audit events keep their
 * single-document shape). The one certified key signs each document in input order: `raw`, its digest;
 * `cms`, its container's signed attributes, which name the certificate; `dss-task`, the task's bytes as
 * updated for the certificate (sign-task.ts).
 */
import { signatureMadeEvent } from '../audit';
import type { AdesProfile } from '../shared/formats';
import type { AttemptContext, DocumentPlan } from './attempt-context';
import type { CertifiedKey } from './certification';
import type { SignDocument } from './documents';
import type { StoredSignRequest } from './request-state';
import type { PreparedContainer } from './signature-container';
import { signTaskDigest, type PreparedTask } from './sign-task';

/** The request's documents, or its single document as a list of one (records without a level: B-B). */
export function documentPlanOf(record: StoredSignRequest): DocumentPlan {
  if (record.documents) {
    return {
      single: false,
      documents: record.documents.map((d) =>
        d.format === 'cms' ? { ...d, profile: d.profile ?? 'CAdES-B-B', ...levelsOf(d) } : d,
      ),
    };
  }
  const format = record.format ?? 'raw';
  const document: SignDocument = {
    digest: record.digest,
    digestAlgorithm: record.digestAlgorithm,
    format,
    ...(format === 'cms' ? { ...optionalProfile(record.profile), ...levelsOf(record) } : {}),
  };
  return { single: true, documents: [document] };
}

function levelsOf(
  d: Pick<SignDocument, 'level' | 'minimumLevel'>,
): Pick<SignDocument, 'level' | 'minimumLevel'> {
  const level = d.level ?? 'B-B';
  return { level, minimumLevel: d.minimumLevel ?? level };
}

function optionalProfile(profile: AdesProfile | undefined): { profile?: AdesProfile } {
  return profile === undefined ? {} : { profile };
}

/**
 * Whether a document cannot be made here: a `cms` one without a container builder (or a single one without
 * a profile), a `dss-task` without a task preparer or its task.
 */
export function containersUnsupported(ctx: AttemptContext): boolean {
  return ctx.plan.documents.some(
    (d) =>
      (d.format === 'cms' && (!ctx.deps.buildContainer || !d.profile)) ||
      (d.format === 'dss-task' && (!ctx.deps.prepareTask || !d.task)),
  );
}

/** Whether a `dss-task` document's task is not the one its digest (which the login binds) names. */
export function tasksMismatched(ctx: AttemptContext): boolean {
  return ctx.plan.documents.some(
    (d) => d.format === 'dss-task' && (!d.task || signTaskDigest(d.task, d.digestAlgorithm) !== d.digest),
  );
}

/** One document's signature, and for a container the container waiting for it. */
export interface MadeSignature {
  readonly signature: Buffer;
  readonly prepared?: PreparedContainer;
  /** A sign task as updated for the certificate (its signature already encoded for the task). */
  readonly task?: PreparedTask;
}

/**
 * The key signs every document in input order; `signedAt` is when the last signature was made. The key
 * stays live: the caller destroys it.
 */
export async function signDocuments(
  ctx: AttemptContext,
  certified: CertifiedKey,
): Promise<{ made: MadeSignature[]; signedAt: number }> {
  const made: MadeSignature[] = [];
  let signedAt = 0;
  for (const [index, doc] of ctx.plan.documents.entries()) {
    const prepared = doc.format === 'cms' ? await prepareContainer(ctx, certified, doc) : undefined;
    const task = doc.format === 'dss-task' ? await prepareTask(ctx, certified, doc) : undefined;
    const toBeSigned = (prepared ?? task)?.toBeSigned ?? Buffer.from(doc.digest, 'base64');
    const signature = await signWithKey(ctx, certified, doc, toBeSigned, ctx.plan.single ? undefined : index);
    signedAt = ctx.clock();
    made.push(task ? { signature: task.encodeSignature(signature), task } : { signature, prepared });
  }
  return { made, signedAt };
}

/** The container's signed attributes, naming the certificate: what the key signs for a `cms` document. */
function prepareContainer(
  ctx: AttemptContext,
  certified: CertifiedKey,
  doc: SignDocument,
): Promise<PreparedContainer> {
  const { issued } = certified;
  return ctx.stage('container', async () =>
    ctx.deps.buildContainer!({
      profile: doc.profile!,
      digestAlgorithm: doc.digestAlgorithm,
      signatureAlgorithm: ctx.record.signatureAlgorithm,
      messageDigest: Buffer.from(doc.digest, 'base64'),
      certificatePem: issued.certificatePem,
      chainPem: issued.chainPem,
      signingTime: new Date(ctx.clock()),
    }),
  );
}

/** The sign task updated for the certificate: what the key signs for a `dss-task` document. */
function prepareTask(ctx: AttemptContext, certified: CertifiedKey, doc: SignDocument): Promise<PreparedTask> {
  return ctx.stage('container', async () =>
    ctx.deps.prepareTask!({
      task: doc.task!,
      digestAlgorithm: doc.digestAlgorithm,
      signatureAlgorithm: ctx.record.signatureAlgorithm,
      certificatePem: certified.issued.certificatePem,
      signingTime: new Date(ctx.clock()),
    }),
  );
}

/** One signature by the key, and its audit event (with the document's index in a request with `documents`). */
async function signWithKey(
  ctx: AttemptContext,
  certified: CertifiedKey,
  doc: SignDocument,
  toBeSigned: Buffer,
  documentIndex: number | undefined,
): Promise<Buffer> {
  const key = ctx.key.handle;
  const signature = await ctx.stage('sign', () =>
    ctx.deps.hsm.signDigest(key, toBeSigned, {
      digestAlgorithm: doc.digestAlgorithm,
      signatureAlgorithm: ctx.record.signatureAlgorithm,
    }),
  );
  ctx.audit.push(
    signatureMadeEvent({
      requestId: ctx.record.id,
      signature,
      publicKeySpki: certified.publicKeySpki,
      keyId: ctx.key.keyId,
      ...(documentIndex === undefined ? {} : { documentIndex }),
    }),
  );
  return signature;
}
