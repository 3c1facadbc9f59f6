/**
 * The one mapping from an exception to what a client is told (clientFailureOf), and the CSC door's
 * shaping of it: which errors are refusals, which are worth a retry, and that nothing else leaks a word.
 */
import { CSC_ERRORS, CscError, cscErrorOf } from '@pipeline/core/csc';
import { AssertionError, IdentityProviderUnavailableError, SignMessageError } from '@pipeline/core/identity';
import { SerialCollisionError } from '@pipeline/core/pki';
import {
  clientCodeOf,
  clientFailureOf,
  HsmBusyError,
  isRetryCode,
  PipelineError,
} from '@pipeline/core/shared';

describe('clientFailureOf', () => {
  test('a named error with a code of the registry is a refusal: its code, the registry status, its message', () => {
    expect(clientFailureOf(new AssertionError('ASSERTION_REPLAYED', 'already used'))).toEqual({
      kind: 'refused',
      code: 'ASSERTION_REPLAYED',
      status: 409,
      message: 'already used',
    });
    expect(clientFailureOf(new SignMessageError('too long'))).toMatchObject({
      kind: 'refused',
      code: 'SIGN_MESSAGE_INVALID',
      status: 400,
    });
  });

  test('a refusal whose code has no HTTP status is a 400 (the CA refusals, ASSERTION_STALE)', () => {
    expect(clientFailureOf(new AssertionError('ASSERTION_STALE', 'too old'))).toMatchObject({
      kind: 'refused',
      status: 400,
    });
    expect(clientFailureOf(new PipelineError('refused', 'ALREADY_CERTIFIED'))).toMatchObject({
      kind: 'refused',
      code: 'ALREADY_CERTIFIED',
    });
  });

  test('an error with an internal code that names its client code: refused with that code, its own kept', () => {
    const collision = new SerialCollisionError();
    expect(clientFailureOf(collision)).toMatchObject({ kind: 'refused', code: 'CERTIFICATE_ISSUE_FAILED' });
    expect(collision.code).toBe('SERIAL_COLLISION');
  });

  test("an unavailable identity provider: 503 in fixed words with a Retry-After, never its cause's text", () => {
    const failure = clientFailureOf(
      new IdentityProviderUnavailableError('the token endpoint https://idp.internal/token answered 502'),
    );
    expect(failure).toEqual({
      kind: 'unavailable',
      code: 'IDENTITY_PROVIDER_UNAVAILABLE',
      status: 503,
      message: 'the identity provider keys are unavailable, retry later',
      retryAfterSeconds: 5,
    });
  });

  test('an SDK or network failure of a backing service: SERVICE_UNAVAILABLE, retry after a second', () => {
    const sdk = Object.assign(new Error('ProvisionedThroughputExceeded for table secret-table'), {
      $metadata: { httpStatusCode: 400 },
    });
    const network = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:4566'), { code: 'ECONNREFUSED' });
    for (const err of [sdk, network]) {
      expect(clientFailureOf(err)).toEqual({
        kind: 'unavailable',
        code: 'SERVICE_UNAVAILABLE',
        status: 503,
        message: 'a backing service is unavailable, retry later',
        retryAfterSeconds: 1,
      });
    }
  });

  test('a registered code that says "retry later" is unavailable, with its own message', () => {
    expect(clientFailureOf(new PipelineError('no key in time', 'KEYS_UNAVAILABLE'))).toEqual({
      kind: 'unavailable',
      code: 'KEYS_UNAVAILABLE',
      status: 503,
      message: 'no key in time',
    });
  });

  test('anything else is internal: INTERNAL_ERROR 500, and not a word of its message', () => {
    const secret = 'PIN 1234 for 197001011234';
    for (const err of [
      new Error(secret),
      new PipelineError(secret, 'AUDIT_APPEND_CONFLICT'),
      new HsmBusyError(secret, 'sign'),
      'a string',
      undefined,
    ]) {
      const failure = clientFailureOf(err);
      expect(failure).toEqual({
        kind: 'internal',
        code: 'INTERNAL_ERROR',
        status: 500,
        message: 'internal error',
      });
      expect(JSON.stringify(failure)).not.toContain('1234');
    }
  });
});

describe('isRetryCode', () => {
  test("the CA's CA_UNAVAILABLE and the other unavailable codes say retry later; refusals do not", () => {
    expect(['CA_UNAVAILABLE', 'SERVICE_UNAVAILABLE', 'KEYS_UNAVAILABLE'].map(isRetryCode)).toEqual([
      true,
      true,
      true,
    ]);
    expect(['ALREADY_CERTIFIED', 'SERIAL_COLLISION', 'INTERNAL_ERROR'].map(isRetryCode)).toEqual([
      false,
      false,
      false,
    ]);
  });
});

describe('clientCodeOf: the code a failed request may carry from its cause', () => {
  test('a registry code or a PKCS#11 CKR_ name; nothing for an internal code or a name only', () => {
    expect(clientCodeOf(new PipelineError('x', 'ALREADY_CERTIFIED'))).toBe('ALREADY_CERTIFIED');
    expect(clientCodeOf(new PipelineError('x', 'CKR_DEVICE_ERROR'))).toBe('CKR_DEVICE_ERROR');
    expect(clientCodeOf(new SerialCollisionError())).toBeUndefined();
    expect(clientCodeOf(new TypeError('boom'))).toBeUndefined();
    expect(clientCodeOf({ code: 'not a code' })).toBeUndefined();
  });
});

describe('cscErrorOf: the CSC door shapes the mapped failure', () => {
  test("its own OAuth refusals as they are; a refusal by its code's CSC error; the unexpected as server_error", () => {
    const own = new CscError('invalid_grant', 'the code is unknown');
    expect(cscErrorOf(own)).toBe(own);
    expect(cscErrorOf(new AssertionError('ASSERTION_EXPIRED', 'expired')).toJSON()).toEqual({
      error: 'access_denied',
      error_description: 'expired',
    });
    const unavailable = cscErrorOf(new IdentityProviderUnavailableError('fetch failed: ECONNRESET'));
    expect([unavailable.code, unavailable.status]).toEqual(['temporarily_unavailable', 503]);
    const internal = cscErrorOf(new Error('secret'));
    expect(internal.toJSON()).toEqual({ error: 'server_error', error_description: 'internal error' });
    expect(internal.status).toBe(CSC_ERRORS.server_error);
  });
});
