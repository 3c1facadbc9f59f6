/**
 * The intake's typed outcomes as CSC answers: a refusal, or a failed request's error, as the CSC error
 * cscErrorFor maps it to; a signed request's signatures (signHash) or CMS and validation info (signDoc).
 */
import { ApiError, type SignRequestView, type SubmitOutcome } from '@pipeline/api';
import { clientFailureOf } from '@pipeline/core/shared';
import { CscError } from '@pipeline/core/csc';
import { requestOf, signedAnswer } from '../src/results';

const result = (request: Partial<SignRequestView>): SubmitOutcome => ({
  kind: 'result',
  request: { id: 'r', status: 'signed', ...request },
});

const thrown = (f: () => unknown): CscError => {
  try {
    f();
  } catch (err) {
    return err as CscError;
  }
  throw new Error('nothing thrown');
};

test('a refusal of the intake is the CSC error of its client code, with its message', () => {
  const refused: SubmitOutcome = {
    kind: 'refused',
    error: clientFailureOf(new ApiError('POOL_EMPTY', 'no key, retry')),
    headers: {},
  };
  const err = thrown(() => requestOf(refused));
  expect(err).toBeInstanceOf(CscError);
  expect(err.toJSON()).toEqual({ error: 'too_many_requests', error_description: 'no key, retry' });
  const assertion = thrown(() =>
    requestOf({
      kind: 'refused',
      error: clientFailureOf(new ApiError('ASSERTION_EXPIRED', 'expired')),
      headers: {},
    }),
  );
  expect(assertion.code).toBe('access_denied');
});

test("a failed request's error is mapped as a refusal; an accepted one is not yet a result", () => {
  const failed = result({ status: 'failed', error: { code: 'HSM_ERROR', message: 'the HSM failed' } });
  expect(thrown(() => signedAnswer(failed, 'signHash', 1, false)).toJSON()).toEqual({
    error: 'server_error',
    error_description: 'the HSM failed',
  });
  const accepted: SubmitOutcome = { kind: 'accepted', id: 'r', status: 'received', fresh: true };
  expect(requestOf(accepted)).toBeUndefined();
  expect(signedAnswer(accepted, 'signHash', 1, false)).toBeUndefined();
  expect(signedAnswer(result({ status: 'signing' }), 'signHash', 1, false)).toBeUndefined();
});

test('signHash: the signatures in order, only all of them', () => {
  const signed = result({ documents: [{ signature: 'AA==' }, { signature: 'AQ==' }] });
  expect(JSON.parse(signedAnswer(signed, 'signHash', 2, false)!.body)).toEqual({
    signatures: ['AA==', 'AQ=='],
  });
  expect(signedAnswer(signed, 'signHash', 3, false)).toBeUndefined();
  expect(signedAnswer(result({ signature: undefined }), 'signHash', 1, false)).toBeUndefined();
});

test('signDoc: the CMS, and with returnValidationInfo the validation data of all, once each', () => {
  const data = (certificates: string[]) => ({ certificates, ocspResponses: ['o'], crls: [] });
  const signed = result({
    documents: [
      { cms: 'MA==', validationData: data(['c1', 'c2']) },
      { cms: 'MQ==', validationData: data(['c2']) },
    ],
  });
  expect(JSON.parse(signedAnswer(signed, 'signDoc', 2, true)!.body)).toEqual({
    SignatureObject: ['MA==', 'MQ=='],
    validationInfo: { certificates: ['c1', 'c2'], ocsp: ['o'], crl: [] },
  });
  expect(JSON.parse(signedAnswer(signed, 'signDoc', 2, false)!.body)).toEqual({
    SignatureObject: ['MA==', 'MQ=='],
  });
});
