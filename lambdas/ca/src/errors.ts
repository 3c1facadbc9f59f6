/**
 * The CA's named errors. Each has a machine-readable `code` the signer reports to the client and a
 * message without personal data (no names, no personal numbers, no request contents).
 */
export { BadCsrError, CsrSignatureInvalidError } from '../../pki/src';
export { InvalidIdentityError, SerialCollisionError } from '../../core/src';

export abstract class CaError extends Error {
  public abstract readonly code: string;
}

export class RequestUnknownError extends CaError {
  public override readonly name = 'RequestUnknownError';
  public readonly code = 'REQUEST_UNKNOWN';
  public constructor() {
    super('no sign request with this id exists');
  }
}

/** The request is not in state `signing` (not started, or already signed or failed). */
export class RequestNotSigningError extends CaError {
  public override readonly name = 'RequestNotSigningError';
  public readonly code = 'REQUEST_NOT_SIGNING';
  public constructor(public readonly status: string) {
    super(`the sign request is ${status}, not signing: no certificate is issued for it`);
  }
}

/** The CSR's key is not of the key type the request was made for. */
export class KeyMismatchError extends CaError {
  public override readonly name = 'KeyMismatchError';
  public readonly code = 'KEY_MISMATCH';
  public constructor(expected: string, actual: string) {
    super(`the CSR key is ${actual}, the sign request is for ${expected}`);
  }
}

/** The request already has a certificate for a different public key: one certificate per request. */
export class AlreadyCertifiedError extends CaError {
  public override readonly name = 'AlreadyCertifiedError';
  public readonly code = 'ALREADY_CERTIFIED';
  public constructor() {
    super('the sign request already has a certificate for another public key');
  }
}

/** The CA keys or certificates are missing or do not belong together: run the CA bootstrap. */
export class CaNotReadyError extends CaError {
  public override readonly name = 'CaNotReadyError';
  public readonly code = 'CA_NOT_READY';
}
