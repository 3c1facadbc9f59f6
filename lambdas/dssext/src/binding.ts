/**
 * What a verified SignRequest makes: the pipeline request (@pipeline/dss pipelineRequestOf), the login's
 * nonce over it and the AuthnRequest ID derived from the nonce and the SignRequest's octets, exactly as
 * the CA's evidence verifier derives them, so the assertion answers this very sign request.
 */
import { createHash } from 'node:crypto';
import { assertionNonce, authnRequestId } from '@pipeline/core/identity';
import { pipelineRequestOf, taskDocuments, type PipelineRequest, type SignRequest } from '@pipeline/dss';

export interface RequestBinding {
  readonly pipeline: PipelineRequest;
  /** The posted SignRequest's octets (the evidence carries them). */
  readonly octets: Buffer;
  readonly authnRequestId: string;
}

export function bindingOf(request: SignRequest, encoded: string): RequestBinding {
  const pipeline = pipelineRequestOf(request);
  const octets = Buffer.from(encoded, 'base64');
  const nonce = assertionNonce({
    requestId: pipeline.requestId,
    keyType: pipeline.keyType,
    signatureAlgorithm: pipeline.signatureAlgorithm,
    documents: taskDocuments(pipeline),
  });
  return { pipeline, octets, authnRequestId: authnRequestId(nonce, octets) };
}

/** The key of a SignRequest's one use: its SignRequester and RequestID. */
export function requestKey(request: SignRequest): string {
  return createHash('sha256').update(`${request.signRequester}\n${request.requestId}`).digest('hex');
}

/** The pipeline client a registered e-service submits as. */
export function clientOf(request: SignRequest): string {
  return `dss:${request.signRequester}`;
}
