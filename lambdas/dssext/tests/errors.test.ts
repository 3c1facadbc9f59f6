import { DSS_STATUS } from '@pipeline/dss';
import { STATUS_OF_LOGIN_REFUSAL, statusOfCode } from '../src/errors';

test("the pipeline's client codes map to the framework's statuses; an unknown failure is the service's", () => {
  expect(statusOfCode('SIGNER_MISMATCH')).toBe('USER_MISMATCH');
  expect(statusOfCode('ASSERTION_APPROVAL_MISSING')).toBe('SIGN_MESSAGE_ERROR');
  expect(statusOfCode('ASSERTION_REPLAYED')).toBe('SECURITY_VIOLATION');
  expect(statusOfCode('ASSERTION_LOA_INSUFFICIENT')).toBe('UNSUPPORTED_LOA');
  expect(statusOfCode('ASSERTION_SIGNATURE_INVALID')).toBe('AUTHN_FAILED');
  expect(statusOfCode('CLIENT_NOT_TRUSTED')).toBe('AUTHN_FAILED');
  expect(statusOfCode('POOL_EMPTY')).toBe('GENERAL_ERROR');
  expect(statusOfCode('INTERNAL_ERROR')).toBe('GENERAL_ERROR');
});

test('every identity provider refusal has a status of the registry, none of them success', () => {
  for (const status of Object.values(STATUS_OF_LOGIN_REFUSAL)) {
    expect(DSS_STATUS[status].major).toMatch(/ResponderError$/);
  }
  expect(STATUS_OF_LOGIN_REFUSAL.cancel).toBe('USER_CANCEL');
});
