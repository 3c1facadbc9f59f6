import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import {
  DIGEST_ALGORITHMS,
  DIGEST_LENGTH,
  KEY_TYPES,
  SIGNATURE_ALGORITHMS,
  defaultSignatureAlgorithm,
  fits,
  type DigestAlgorithm,
  type KeyType,
  type AdesProfile,
  type SignatureAlgorithm,
  type SignatureFormat,
} from '@pipeline/core/shared';
import {
  DEFAULT_SIGNATURE_LEVEL,
  SIGNATURE_LEVELS,
  DocumentsError,
  validateDocuments,
  levelAtLeast,
  type SignatureLevel,
} from '@pipeline/core/signing';
import {
  SignMessageError,
  composeSignMessage,
  manifestHash,
  validateSignMessage,
} from '@pipeline/core/identity';
import openapi from '../openapi.json';
import { ApiError, ValidationError } from './errors';
import type { SignRequestInput } from './types';

/**
 * Request validation against the OpenAPI document's schema, which states every rule on the body's shape
 * (so that a schema-valid body is accepted); the rules across fields and the certificate profile's
 * identity rules are also applied here, for their precise messages and for the names' NFC form.
 */
const ajv = new Ajv({ allErrors: false, strict: false });
ajv.addSchema(openapi, 'openapi.json');
const validateInput = ajv.getSchema(
  'openapi.json#/components/schemas/SignRequestInput',
) as ValidateFunction<RawInput>;
const UUID = new RegExp(openapi.components.schemas.Id.pattern);

interface RawInput {
  requestId?: string;
  digest: string;
  digestAlgorithm: DigestAlgorithm;
  keyType?: KeyType;
  signatureAlgorithm?: SignatureAlgorithm;
  format?: SignatureFormat;
  profile?: AdesProfile;
  level?: SignatureLevel;
  minimumLevel?: SignatureLevel;
  identityAssertion?: string;
  signMessage?: unknown;
  documents?: unknown;
}

/** The single document's fields, never sent with `documents`. */
const SINGLE_DOCUMENT_FIELDS = ['digest', 'digestAlgorithm', 'format', 'profile', 'level', 'minimumLevel'];

export function parseSignRequest(body: unknown): SignRequestInput {
  presenceRules(body);
  if (!validateInput(body)) {
    const error = validateInput.errors?.[0];
    // A token that is too long or not three base64url segments has its own code, like every assertion refusal.
    if (error?.instancePath === '/identityAssertion') {
      throw new ApiError(
        'ASSERTION_MALFORMED',
        'identityAssertion must be a compact JWS of at most 8192 characters',
      );
    }
    // So has a sign message outside its rules, with the rule named.
    if (error?.instancePath.startsWith('/signMessage')) {
      signMessageOf(body as RawInput);
      throw new ApiError('SIGN_MESSAGE_INVALID', describe(error));
    }
    // The schema states every rule; when one of the rules across fields (or the identity's) is what
    // failed, it is named in the message (and code) a client can act on.
    crossFieldRules(body as Partial<RawInput>);
    throw new ValidationError(describe(error));
  }
  crossFieldRules(body);
  const keyType = body.keyType ?? 'RSA-2048';
  if (body.documents !== undefined) return documentsRequest(body, keyType);
  const format = body.format ?? 'raw';
  const signMessage = body.signMessage === undefined ? undefined : signMessageOf(body);
  return {
    requestId: body.requestId!.toLowerCase(),
    format,
    ...(format === 'cms'
      ? {
          profile: body.profile ?? 'CAdES-B-B',
          level: body.level ?? DEFAULT_SIGNATURE_LEVEL,
          minimumLevel: body.minimumLevel ?? body.level ?? DEFAULT_SIGNATURE_LEVEL,
        }
      : {}),
    digest: body.digest,
    digestAlgorithm: body.digestAlgorithm,
    keyType,
    signatureAlgorithm: body.signatureAlgorithm ?? defaultSignatureAlgorithm(keyType),
    identityAssertion: body.identityAssertion!,
    ...(signMessage ? { signMessage, approvedMessage: signMessage } : {}),
  };
}

/**
 * A request for several documents: each resolved (documentsOf), the request's digest the manifest's, the
 * sign message composed with the documents' list (SIGN_MESSAGE_INVALID when that is too long).
 */
function documentsRequest(body: RawInput, keyType: KeyType): SignRequestInput {
  const documents = documentsOf(body.documents);
  const signMessage = body.signMessage === undefined ? undefined : signMessageOf(body);
  let approvedMessage;
  try {
    approvedMessage = signMessage && composeSignMessage(signMessage, documents);
  } catch (err) {
    if (err instanceof SignMessageError) throw new ApiError('SIGN_MESSAGE_INVALID', err.message);
    throw err;
  }
  return {
    requestId: body.requestId!.toLowerCase(),
    documents,
    digest: Buffer.from(manifestHash(documents), 'base64url').toString('base64'),
    digestAlgorithm: 'SHA-256',
    keyType,
    signatureAlgorithm: body.signatureAlgorithm ?? defaultSignatureAlgorithm(keyType),
    identityAssertion: body.identityAssertion!,
    ...(signMessage ? { signMessage, approvedMessage } : {}),
  };
}

/** The documents by the core's rules (the schema states them too), defaults applied: VALIDATION_FAILED. */
function documentsOf(value: unknown): ReturnType<typeof validateDocuments> {
  try {
    return validateDocuments(value);
  } catch (err) {
    if (err instanceof DocumentsError) throw new ValidationError(err.message);
    throw err;
  }
}

/** The sign message by the core's rules (the schema states them too): SIGN_MESSAGE_INVALID otherwise. */
function signMessageOf(body: RawInput): ReturnType<typeof validateSignMessage> {
  try {
    return validateSignMessage(body.signMessage);
  } catch (err) {
    if (err instanceof SignMessageError) throw new ApiError('SIGN_MESSAGE_INVALID', err.message);
    throw err;
  }
}

/**
 * The rules that join fields (also in the schema's allOf) and the certificate profile's identity rules,
 * with their own messages. Each is checked only when its fields have the right types, so it is safe on
 * a body the schema refused.
 */
function crossFieldRules(body: Partial<RawInput>): void {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return;
  if (body.documents !== undefined) {
    const both = SINGLE_DOCUMENT_FIELDS.filter((f) => (body as Record<string, unknown>)[f] !== undefined);
    if (both.length > 0) {
      throw new ValidationError(
        `documents is never sent with the single document's fields (${both.join(', ')}): send either`,
      );
    }
    documentsOf(body.documents);
  } else {
    // The schema's anyOf (single document or documents) would not name the field.
    for (const field of ['digest', 'digestAlgorithm'] as const) {
      if (body[field] === undefined) throw new ValidationError(`${field} is required`);
    }
  }
  const known = <T extends string>(value: unknown, values: readonly T[]): value is T =>
    typeof value === 'string' && (values as readonly string[]).includes(value);
  const keyType = body.keyType ?? 'RSA-2048';
  const signatureAlgorithm = body.signatureAlgorithm;
  if (
    known(keyType, KEY_TYPES) &&
    known(signatureAlgorithm, SIGNATURE_ALGORITHMS) &&
    !fits(keyType, signatureAlgorithm)
  ) {
    throw new ValidationError(`signatureAlgorithm ${signatureAlgorithm} does not fit keyType ${keyType}`);
  }
  if (typeof body.digest === 'string' && known(body.digestAlgorithm, DIGEST_ALGORITHMS)) {
    const digest = Buffer.from(body.digest, 'base64');
    if (digest.toString('base64') !== body.digest || digest.length !== DIGEST_LENGTH[body.digestAlgorithm]) {
      throw new ValidationError(
        `digest must be the base64 of exactly ${DIGEST_LENGTH[body.digestAlgorithm]} bytes for ${body.digestAlgorithm}`,
      );
    }
  }
  if ((body.format ?? 'raw') === 'raw' && body.profile !== undefined) {
    throw new ValidationError('profile applies to format cms only');
  }
  if ((body.format ?? 'raw') === 'raw' && (body.level !== undefined || body.minimumLevel !== undefined)) {
    throw new ValidationError('level and minimumLevel apply to format cms only');
  }
  const level = known(body.level, SIGNATURE_LEVELS) ? body.level : DEFAULT_SIGNATURE_LEVEL;
  if (known(body.minimumLevel, SIGNATURE_LEVELS) && !levelAtLeast(level, body.minimumLevel)) {
    throw new ValidationError(`minimumLevel ${body.minimumLevel} is above level ${level}`);
  }
}

/**
 * Who vouches for the signer, checked before the schema (which says the same) so that each case gets its
 * own code: an identity assertion, with the request id it is bound to.
 */
function presenceRules(body: unknown): void {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return;
  const has = (field: string): boolean => (body as Record<string, unknown>)[field] !== undefined;
  if (has('signer')) {
    throw new ApiError(
      'SIGNER_NOT_ALLOWED',
      'the signer is never named in the body: send an ID token, or as a trusted client a signed request object, as identityAssertion',
    );
  }
  if (!has('identityAssertion')) {
    throw new ApiError('IDENTITY_ASSERTION_REQUIRED');
  }
  if (!has('requestId')) {
    throw new ApiError(
      'REQUEST_ID_REQUIRED',
      "requestId is required with identityAssertion: the assertion's nonce is derived from it",
    );
  }
}

export function isRequestId(value: string): boolean {
  return UUID.test(value);
}

/** A schema error as a sentence naming the field (never the submitted value). */
function describe(error: ErrorObject | undefined): string {
  if (!error) return 'invalid request body';
  const field = error.instancePath ? error.instancePath.slice(1).replace(/\//g, '.') : 'body';
  switch (error.keyword) {
    case 'additionalProperties':
      return `${field === 'body' ? '' : `${field}: `}unknown field "${String(error.params.additionalProperty).slice(0, 40)}"`;
    case 'required':
      return `${field === 'body' ? '' : `${field}.`}${String(error.params.missingProperty)} is required`;
    case 'enum':
      return `${field} must be one of ${(error.params.allowedValues as string[]).join(', ')}`;
    default:
      return `${field} ${error.message ?? 'is invalid'}`;
  }
}
