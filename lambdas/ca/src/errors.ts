/**
 * The CA's named errors. Each has a machine-readable `code` the signer reports to the client and a
 * message without personal data (no names, no personal numbers, no request contents). What counts as a
 * refusal (audited, answered with its code) is the core's one mapping, clientFailureOf: these, the
 * identity's and the CSR's refusals, and a serial collision.
 */
export { BadCsrError, CsrSignatureInvalidError } from '@pipeline/der';
import { PipelineError, type ClientCodeName, type PipelineErrorOptions } from '@pipeline/core/shared';
import { SerialCollisionError } from '@pipeline/core/pki';

export { SerialCollisionError };

/** The CA's refusals: each subclass sets its own code, one of the registry's (the signer's client sees it). */
export abstract class CaError extends PipelineError {
  declare public readonly code: ClientCodeName;
  public constructor(message: string, options?: PipelineErrorOptions) {
    super(message, 'CA_ERROR', options);
  }
}

/** The request id is not one (empty, too long) or is not the one the assertion's binding names. */
export class RequestUnknownError extends CaError {
  public override readonly name = 'RequestUnknownError';
  public override readonly code = 'REQUEST_UNKNOWN';
  public constructor() {
    super('the certificate request names no valid sign request id');
  }
}

/** The CSR's key is not of the key type the request was made for. */
export class KeyMismatchError extends CaError {
  public override readonly name = 'KeyMismatchError';
  public override readonly code = 'KEY_MISMATCH';
  public constructor(expected: string, actual: string) {
    super(`the CSR key is ${actual}, the sign request is for ${expected}`);
  }
}

/** The request already has a certificate for a different public key: one certificate per request. */
export class AlreadyCertifiedError extends CaError {
  public override readonly name = 'AlreadyCertifiedError';
  public override readonly code = 'ALREADY_CERTIFIED';
  public constructor(message = 'the sign request already has a certificate for another public key') {
    super(message);
  }
}

/**
 * A one-time credential's use names a credential the CA did not certify, or another key or person than
 * the one it certified: nothing to release.
 */
export class CredentialUnknownError extends CaError {
  public override readonly name = 'CredentialUnknownError';
  public override readonly code = 'CREDENTIAL_UNKNOWN';
  public constructor(what = 'the CA certified no such one-time credential') {
    super(what);
  }
}

/** The one-time credential's certificate was released to another request: one approved use. */
export class CredentialUsedError extends CaError {
  public override readonly name = 'CredentialUsedError';
  public override readonly code = 'CREDENTIAL_USED';
  public constructor() {
    super('the one-time credential was used for another request');
  }
}

/** The one-time credential's certificate expired (or is about to): its key serves nothing more. */
export class CredentialExpiredError extends CaError {
  public override readonly name = 'CredentialExpiredError';
  public override readonly code = 'CREDENTIAL_EXPIRED';
  public constructor() {
    super("the one-time credential's certificate has expired");
  }
}

/** The one-time credential's certificate is revoked: no revocation is undone by a use. */
export class CredentialRevokedError extends CaError {
  public override readonly name = 'CredentialRevokedError';
  public override readonly code = 'CREDENTIAL_REVOKED';
  public constructor() {
    super("the one-time credential's certificate is revoked");
  }
}

/** The CA keys or certificates are missing or do not belong together: run the CA bootstrap. */
export class CaNotReadyError extends CaError {
  public override readonly name = 'CaNotReadyError';
  public override readonly code = 'CA_NOT_READY';
}

/** The CSR names another person than the verified identity assertion: the request was altered. */
export class SignerMismatchError extends CaError {
  public override readonly name = 'SignerMismatchError';
  public override readonly code = 'SIGNER_MISMATCH';
  public constructor() {
    super('the certificate request names another signer than the identity assertion');
  }
}

/** The identity assertion was already certified for another sign request: one login, one signature. */
export class AssertionAlreadyUsedError extends CaError {
  public override readonly name = 'AssertionAlreadyUsedError';
  public override readonly code = 'ASSERTION_ALREADY_USED';
  public constructor() {
    super('this identity assertion was already used for another certificate');
  }
}

/** The public key was certified before: a copy of a used one-time key (a restored pool item). */
export class PublicKeyAlreadyCertifiedError extends CaError {
  public override readonly name = 'PublicKeyAlreadyCertifiedError';
  public override readonly code = 'PUBLIC_KEY_ALREADY_CERTIFIED';
  public constructor() {
    super('this public key was certified before: a one-time key is certified once');
  }
}

/**
 * The CSR carries its public key in another encoding than the key's one canonical form (a compressed EC
 * point, RSA without NULL parameters, ...): a re-encoded copy of a key would hash as a new one.
 */
export class PublicKeyNotCanonicalError extends CaError {
  public override readonly name = 'PublicKeyNotCanonicalError';
  public override readonly code = 'PUBLIC_KEY_NOT_CANONICAL';
  public constructor() {
    super('the CSR public key is not in its canonical encoding');
  }
}
