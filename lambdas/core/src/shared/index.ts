export {
  defaultSignatureAlgorithm,
  DIGEST_ALGORITHMS,
  DIGEST_LENGTH,
  type DigestAlgorithm,
  fits,
  isKeyType,
  KEY_TYPE_SPECS,
  KEY_TYPES,
  type KeyType,
  nodeHashName,
  SIGNATURE_ALGORITHMS,
  type SignatureAlgorithm,
  signatureAlgorithmsFor,
} from './algorithms';
export { backoffDelay, sleep } from './backoff';
export {
  CLIENT_CODES,
  type ClientCode,
  type ClientCodeName,
  type HttpErrorCode,
  httpStatusOf,
  messageOf,
} from './client-codes';
export { type ClientFailure, clientCodeOf, clientFailureOf, isRetryCode } from './client-failures';
export { Coalescer, type CoalescerOptions, type Settled } from './coalescer';
export { errorCode, isTransient, PipelineError, type PipelineErrorOptions } from './errors';
export { ADES_PROFILES, type AdesProfile, type SignatureFormat } from './formats';
export {
  type GeneratedKeyPair,
  type GenerateOptions,
  type Hsm,
  HsmBusyError,
  HsmError,
  HsmKeyNotExtractableError,
  HsmKeyNotFoundError,
  HsmLoginError,
  HsmSessionError,
  HsmTokenNotFoundError,
  HsmUnwrapError,
  type KeyAttributes,
  type PrivateKeyRef,
  type SignOptions,
} from './hsm';
export { retryTransient } from './retry';
