/**
 * The pipeline's sign request as the CSC answers carry it: the request the token's signing names (in the
 * intake's wire form), and a signed request's signatures (signHash) or CMS (signDoc), in order.
 */
import type { SignRequestView, SubmitOutcome } from '@pipeline/api';
import type { CscDocumentSigning, CscGrant, CscMethod } from '@pipeline/core/csc';
import { json, type HttpResult } from '@pipeline/doors';
import { CscError, intakeRefusal } from './errors';

/**
 * The pipeline's sign request the token's signing names: one document, or the documents of its manifest,
 * each in its format: the CMS `formats` names for it (signDoc), else raw (signHash).
 */
export function intakeRequest(
  grant: CscGrant,
  formats: ReadonlyArray<CscDocumentSigning | undefined>,
): Record<string, unknown> & { requestId: string } {
  const { binding, signMessage } = grant.signing!;
  const formatOf = (i: number): Record<string, unknown> => {
    const d = formats[i];
    return d ? { format: 'cms', profile: d.profile, level: d.level } : { format: 'raw' };
  };
  const common = {
    requestId: binding.requestId,
    keyType: binding.keyType,
    signatureAlgorithm: binding.signatureAlgorithm,
    signMessage,
    identityAssertion: grant.idToken,
  };
  if ('documents' in binding) {
    return {
      ...common,
      documents: binding.documents.map((d, i) => ({
        digestAlgorithm: d.digestAlgorithm,
        digest: d.digest,
        ...(d.name === undefined ? {} : { name: d.name }),
        ...formatOf(i),
      })),
    };
  }
  return {
    ...common,
    digest: binding.digest,
    digestAlgorithm: binding.digestAlgorithm,
    ...formatOf(0),
  };
}

/**
 * The request as the pipeline answered it; its refusal, or a failed request's error, as the CSC error
 * cscErrorFor maps it to.
 */
export function requestOf(outcome: SubmitOutcome): SignRequestView | undefined {
  if (outcome.kind === 'refused') throw intakeRefusal(outcome.error);
  if (outcome.kind === 'accepted') return undefined;
  const { request } = outcome;
  if (request.error?.code) throw intakeRefusal(request.error);
  return request;
}

/** The CSC answer of a signed request of the pipeline (in order), or undefined when it is not signed. */
export function signedAnswer(
  outcome: SubmitOutcome,
  method: CscMethod,
  count: number,
  returnValidationInfo: boolean,
): HttpResult | undefined {
  const request = requestOf(outcome);
  if (request?.status !== 'signed') return undefined;
  const results = request.documents ?? [request];
  const values = results.map((r) => (method === 'signHash' ? r.signature : r.cms));
  if (!values.every((v) => typeof v === 'string') || values.length !== count) return undefined;
  if (method === 'signHash') return json(200, { signatures: values });
  return json(200, {
    SignatureObject: values,
    ...(returnValidationInfo ? { validationInfo: validationInfoOf(results) } : {}),
  });
}

export const notSigned = (): never => {
  throw new CscError('server_error', 'the signature was not made within the wait');
};

type SignedResult = Pick<SignRequestView, 'validationData'>;

/** CSC validationInfo: the DER (base64) certificates, OCSP responses and CRLs of the results, once each. */
function validationInfoOf(results: readonly SignedResult[]): Record<string, string[]> {
  const all = (pick: (r: SignedResult) => readonly string[] | undefined) => [
    ...new Set(results.flatMap((r) => pick(r) ?? [])),
  ];
  return {
    certificates: all((r) => r.validationData?.certificates),
    ocsp: all((r) => r.validationData?.ocspResponses),
    crl: all((r) => r.validationData?.crls),
  };
}
