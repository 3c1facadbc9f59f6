import { DIGEST_ALGORITHMS, DIGEST_LENGTH, type DigestAlgorithm } from '../shared/algorithms';
import { ClientVisibleError } from '../shared/errors';
import {
  ADES_PROFILES,
  DEFAULT_SIGNATURE_LEVEL,
  levelAtLeast,
  SIGNATURE_FORMATS,
  SIGNATURE_LEVELS,
  type AdesProfile,
  type DocumentFormat,
  type SignatureLevel,
} from '../shared/formats';
import type { SignTaskData } from './sign-task';
import { characterProblem } from '../identity/sign-message';
import { MAX_DOCUMENT_NAME_LENGTH, MAX_DOCUMENTS } from '../identity/binding';

/**
 * Several documents under one login: a sign request may carry `documents` in place of the single
 * document's fields. One key, one certificate for all of them; one signature (raw or CMS) per document,
 * in input order. The identity assertion binds them all through the manifest (identity/binding.ts, which
 * holds the limits).
 */
export { MAX_DOCUMENTS, MAX_DOCUMENT_NAME_LENGTH };

/** One document of a request, as the API resolved it (defaults applied). */
export interface SignDocument {
  /** Shown to the citizen in the sign message's list of documents; bound by its hash. */
  readonly name?: string;
  /** Standard base64, exactly as sent. */
  readonly digest: string;
  readonly digestAlgorithm: DigestAlgorithm;
  readonly format: DocumentFormat;
  /** For `dss-task`: the task (its digest is signTaskDigest of it). */
  readonly task?: SignTaskData;
  /** For `cms`: default CAdES-B-B. */
  readonly profile?: AdesProfile;
  /** For `cms`: the level asked for (default B-LT) and the lowest accepted (default the level). */
  readonly level?: SignatureLevel;
  readonly minimumLevel?: SignatureLevel;
}

export class DocumentsError extends ClientVisibleError {
  public override readonly name = 'DocumentsError';
  public constructor(message: string) {
    super(message, 'VALIDATION_FAILED');
  }
}

/** Why a name breaks the rule (1 to 120 characters, the sign message's characters, no line feed or tab). */
export function documentNameProblem(name: string): string | undefined {
  const length = [...name].length;
  if (length < 1 || length > MAX_DOCUMENT_NAME_LENGTH) {
    return `must be 1 to ${MAX_DOCUMENT_NAME_LENGTH} characters`;
  }
  if (/[\n\t]/.test(name)) return 'must not contain a line feed or a tab';
  return characterProblem(name);
}

const FIELDS = new Set(['name', 'digest', 'digestAlgorithm', 'format', 'profile', 'level', 'minimumLevel']);

const oneOf = <T extends string>(value: unknown, values: readonly T[]): value is T =>
  typeof value === 'string' && (values as readonly string[]).includes(value);

/**
 * The documents of a request by every rule (the API's schema states the same shape), defaults applied:
 * 1 to MAX_DOCUMENTS objects; `digest` the standard base64 of exactly the digest algorithm's length;
 * `format` raw (default) or cms; `profile`, `level` and `minimumLevel` only with cms (defaults CAdES-B-B,
 * B-LT, the level), minimumLevel not above level; `name` by documentNameProblem. VALIDATION_FAILED
 * (DocumentsError) naming the document's index and the rule, never a value.
 */
export function validateDocuments(value: unknown): SignDocument[] {
  if (!Array.isArray(value) || value.length < 1 || value.length > MAX_DOCUMENTS) {
    throw new DocumentsError(`documents must be an array of 1 to ${MAX_DOCUMENTS} documents`);
  }
  return value.map((raw: unknown, i) => validateDocument(raw, `documents[${i}]`));
}

function validateDocument(raw: unknown, at: string): SignDocument {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new DocumentsError(`${at} must be an object`);
  }
  const d = raw as Record<string, unknown>;
  const unknown = Object.keys(d).find((k) => !FIELDS.has(k));
  if (unknown !== undefined) throw new DocumentsError(`${at}: unknown field "${unknown.slice(0, 40)}"`);
  if (!oneOf(d.digestAlgorithm, DIGEST_ALGORITHMS)) {
    throw new DocumentsError(`${at}.digestAlgorithm must be one of ${DIGEST_ALGORITHMS.join(', ')}`);
  }
  const length = DIGEST_LENGTH[d.digestAlgorithm];
  if (typeof d.digest !== 'string' || Buffer.from(d.digest, 'base64').toString('base64') !== d.digest) {
    throw new DocumentsError(`${at}.digest must be standard base64`);
  }
  if (Buffer.from(d.digest, 'base64').length !== length) {
    throw new DocumentsError(
      `${at}.digest must be the base64 of exactly ${length} bytes for ${d.digestAlgorithm}`,
    );
  }
  const format = d.format ?? 'raw';
  if (!oneOf(format, SIGNATURE_FORMATS)) {
    throw new DocumentsError(`${at}.format must be one of ${SIGNATURE_FORMATS.join(', ')}`);
  }
  if (d.name !== undefined) {
    const problem = typeof d.name === 'string' ? documentNameProblem(d.name) : 'must be a string';
    if (problem) throw new DocumentsError(`${at}.name ${problem}`);
  }
  const name = d.name === undefined ? {} : { name: d.name as string };
  if (format === 'raw') {
    if (d.profile !== undefined) throw new DocumentsError(`${at}: profile applies to format cms only`);
    if (d.level !== undefined || d.minimumLevel !== undefined) {
      throw new DocumentsError(`${at}: level and minimumLevel apply to format cms only`);
    }
    return { ...name, digest: d.digest, digestAlgorithm: d.digestAlgorithm, format };
  }
  const profile = d.profile ?? 'CAdES-B-B';
  if (!oneOf(profile, ADES_PROFILES)) {
    throw new DocumentsError(`${at}.profile must be one of ${ADES_PROFILES.join(', ')}`);
  }
  const level = d.level ?? DEFAULT_SIGNATURE_LEVEL;
  const minimumLevel = d.minimumLevel ?? level;
  if (!oneOf(level, SIGNATURE_LEVELS) || !oneOf(minimumLevel, SIGNATURE_LEVELS)) {
    throw new DocumentsError(`${at}: level and minimumLevel must be one of ${SIGNATURE_LEVELS.join(', ')}`);
  }
  if (!levelAtLeast(level, minimumLevel)) {
    throw new DocumentsError(`${at}: minimumLevel ${minimumLevel} is above level ${level}`);
  }
  return {
    ...name,
    digest: d.digest,
    digestAlgorithm: d.digestAlgorithm,
    format,
    profile,
    level,
    minimumLevel,
  };
}
