/**
 * Beyond B-B: each container's signature time-stamp (B-T), then the validation data (B-LT: the OCSP
 * response the CA issued the certificate with, else the responder's), collected once after the last
 * time-stamp (one leaf, one TSA: the same for every document; the OCSP response postdates every token).
 * A TSA or responder that fails ends the request with its code unless each document concerned accepts
 * the level reached so far (its minimumLevel); then the level is lowered and the caller told.
 */
import type { IssuedCertificate } from '../pki/certificate-issuer';
import type { FailureCode } from '../shared/client-codes';
import { levelAtLeast, type SignatureLevel } from '../shared/formats';
import { failedWith, isEnd, type AttemptContext, type AttemptEnd } from './attempt-context';
import type { MadeSignature } from './document-signing';
import type { ValidationData } from './signature-container';

/** What a document's container carries beyond its signature (B-B for a raw signature: nothing). */
export interface ReachedLevel {
  readonly level: SignatureLevel;
  readonly timeStampToken?: Buffer;
  readonly validationData?: ValidationData;
}

/** Each document's level, in input order; or the ending when a document cannot reach its minimum. */
export async function reachLevels(
  ctx: AttemptContext,
  made: readonly MadeSignature[],
  issued: IssuedCertificate,
): Promise<ReachedLevel[] | AttemptEnd> {
  const tokens: Array<Buffer | undefined> = [];
  for (const [i, doc] of ctx.plan.documents.entries()) {
    if (!wants(ctx, i, 'B-T')) {
      tokens.push(undefined);
      continue;
    }
    try {
      const stamper = ctx.deps.timeStamper;
      if (!stamper) throw new Error('no time-stamping authority configured');
      tokens.push(
        await ctx.stage('timestamp', () => stamper.timeStamp(made[i].signature, doc.digestAlgorithm)),
      );
    } catch (err) {
      const end = settle(ctx, i, 'B-B', 'TSA_UNAVAILABLE', err);
      if (end) return end;
      tokens.push(undefined);
    }
  }
  const needing = tokens.flatMap((token, i) => (token && wants(ctx, i, 'B-LT') ? [i] : []));
  const data = await collectValidationData(ctx, issued, tokens, needing);
  if (isEnd(data)) return data;
  return tokens.map((timeStampToken, i): ReachedLevel => {
    if (!timeStampToken) return { level: 'B-B' };
    if (data && needing.includes(i)) return { level: 'B-LT', timeStampToken, validationData: data };
    return { level: 'B-T', timeStampToken };
  });
}

/** Whether document i is a container asking for at least `floor`. */
function wants(ctx: AttemptContext, i: number, floor: SignatureLevel): boolean {
  const doc = ctx.plan.documents[i];
  return doc.format === 'cms' && levelAtLeast(doc.level ?? 'B-B', floor);
}

/** The validation data for the documents `needing` it, collected once with the last of their tokens. */
async function collectValidationData(
  ctx: AttemptContext,
  issued: IssuedCertificate,
  tokens: readonly (Buffer | undefined)[],
  needing: readonly number[],
): Promise<ValidationData | AttemptEnd | undefined> {
  if (needing.length === 0) return undefined;
  try {
    const source = ctx.deps.validationData;
    if (!source) throw new Error('no validation data source configured');
    const last = tokens[needing[needing.length - 1]]!;
    return await ctx.stage('validation', () =>
      source.collect({
        certificatePem: issued.certificatePem,
        chainPem: issued.chainPem,
        timeStampToken: last,
        ocspResponse: issued.ocspResponse,
      }),
    );
  } catch (err) {
    for (const i of needing) {
      const end = settle(ctx, i, 'B-T', 'VALIDATION_DATA_UNAVAILABLE', err);
      if (end) return end;
    }
    return undefined;
  }
}

/** Document i stays at `reached`: fine within its minimum (the caller is told), else the request ends. */
function settle(
  ctx: AttemptContext,
  i: number,
  reached: SignatureLevel,
  code: FailureCode,
  err: unknown,
): AttemptEnd | undefined {
  const doc = ctx.plan.documents[i];
  if (!levelAtLeast(reached, doc.minimumLevel ?? doc.level ?? 'B-B')) {
    const what =
      code === 'TSA_UNAVAILABLE'
        ? 'the time-stamping authority did not answer'
        : 'the validation data (OCSP, CRL) could not be collected';
    return failedWith(code, ctx.plan.single ? what : `${what} (document ${i})`);
  }
  ctx.deps.onLevelLowered?.(reached, code, err);
  return undefined;
}
