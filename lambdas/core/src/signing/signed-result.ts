/**
 * What a signed request stores: each container finished around its signature (with its time-stamp and,
 * for CAdES, its validation data; a PDF carries those in its DSS, written by the client), in the shape of
 * the request: the record's own fields for a single document, `documentResults` for `documents`.
 */
import type { IssuedCertificate } from '../pki/certificate-issuer';
import type { AttemptContext } from './attempt-context';
import type { MadeSignature } from './document-signing';
import type { SignedResult } from './request-state';
import type { DocumentResult } from './sign-request';
import type { ValidationData } from './signature-container';
import type { ReachedLevel } from './signature-levels';

export type SignedFields = Pick<
  SignedResult,
  | 'signature'
  | 'cms'
  | 'certificate'
  | 'certificateSerial'
  | 'chain'
  | 'reachedLevel'
  | 'validationData'
  | 'documentResults'
  | 'resultsExpireAt'
  | 'reservedKey'
>;

/** The result fields of the request, its containers finished. */
export async function signedResultOf(
  ctx: AttemptContext,
  issued: IssuedCertificate,
  made: readonly MadeSignature[],
  levels: readonly ReachedLevel[],
): Promise<SignedFields> {
  const results: DocumentResult[] = [];
  for (const [index, { signature, prepared, task }] of made.entries()) {
    if (!prepared) {
      results.push({ index, signature: signature.toString('base64'), ...taskResultOf(task) });
      continue;
    }
    const { level, timeStampToken, validationData } = levels[index];
    const cms = await ctx.stage('container', async () =>
      prepared.finish(signature, {
        timeStampToken,
        validationData: ctx.plan.documents[index].profile === 'CAdES-B-B' ? validationData : undefined,
      }),
    );
    results.push({
      index,
      cms: cms.toString('base64'),
      reachedLevel: level,
      ...(validationData ? { validationData: encodeValidationData(validationData) } : {}),
    });
  }
  const certificate = certificateOf(issued);
  if (!ctx.plan.single) {
    return { ...certificate, documentResults: results, resultsExpireAt: ctx.record.expiresAt };
  }
  const { index: _index, ...only } = results[0];
  return { ...only, ...certificate };
}

/** A sign task's bytes as signed (the task's signature is the document's `signature`). */
function taskResultOf(task: MadeSignature['task']): Pick<DocumentResult, 'toBeSignedBytes' | 'adesObject'> {
  if (!task) return {};
  return {
    toBeSignedBytes: task.toBeSignedBytes.toString('base64'),
    ...(task.adesObject ? { adesObject: task.adesObject.toString('base64') } : {}),
  };
}

function encodeValidationData(data: ValidationData): SignedResult['validationData'] {
  const b64 = (list: readonly Buffer[]): string[] => list.map((der) => der.toString('base64'));
  return {
    certificates: b64(data.certificates),
    ocspResponses: b64(data.ocspResponses),
    crls: b64(data.crls),
  };
}

function certificateOf(issued: IssuedCertificate): SignedFields {
  return {
    certificate: issued.certificatePem,
    certificateSerial: issued.serialHex,
    chain: issued.chainPem,
  };
}
