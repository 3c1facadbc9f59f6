import { createHash } from 'node:crypto';
import { PipelineError } from '../shared/errors';

/**
 * The sign message: the text the citizen is shown, and approves, at the identity provider before the
 * signature is made (the Swedish eID federation's SignMessage with MustShow; in OpenID Connect the
 * `sign_message` of the oidc-sweden signature extension). Plain text or Markdown, as that extension
 * allows. The service keeps only its hash: it is bound into the identity assertion's nonce, recorded
 * with the request and in the certificate's audit event, and the assertion must attest that exactly
 * this message was displayed and approved (see approval.ts).
 */
export const SIGN_MESSAGE_MIME_TYPES = ['text/plain', 'text/markdown'] as const;
export type SignMessageMimeType = (typeof SIGN_MESSAGE_MIME_TYPES)[number];

export interface SignMessage {
  readonly text: string;
  readonly mimeType: SignMessageMimeType;
}

/** Characters (Unicode code points): a message to read on a phone screen, not a document. */
export const MAX_SIGN_MESSAGE_LENGTH = 1000;

/**
 * Never in a message: C0 controls but tab and line feed (so one line break, "\n"), DEL, C1 controls, the
 * bidirectional overrides and isolates, which make the displayed order of the text differ from its
 * stored order (the citizen would approve one text and the hash name another), and lone surrogates (not
 * characters; UTF-8 cannot encode them). A character class over code points (regular expression flag u),
 * restated in openapi.json's pattern for signMessage.text.
 */
export const SIGN_MESSAGE_FORBIDDEN =
  '\\u0000-\\u0008\\u000B-\\u001F\\u007F-\\u009F\\u202A-\\u202E\\u2066-\\u2069\\uD800-\\uDFFF';
const FORBIDDEN = new RegExp(`[${SIGN_MESSAGE_FORBIDDEN}]`, 'u');
/** openapi.json's pattern for signMessage.text: none of those, and not blank. */
export const SIGN_MESSAGE_TEXT_PATTERN = `^[^${SIGN_MESSAGE_FORBIDDEN}]*[^\\s${SIGN_MESSAGE_FORBIDDEN}][^${SIGN_MESSAGE_FORBIDDEN}]*$`;

export class SignMessageError extends PipelineError {
  public override readonly name = 'SignMessageError';
  public constructor(message: string) {
    super(message, 'SIGN_MESSAGE_INVALID');
  }
}

/**
 * The message as the API accepts it: `text` of 1 to MAX_SIGN_MESSAGE_LENGTH characters, well-formed
 * Unicode, not blank, none of the FORBIDDEN characters; `mimeType` text/plain (default) or text/markdown.
 * Messages name the rule, never the text.
 */
export function validateSignMessage(value: unknown): SignMessage {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new SignMessageError('signMessage must be an object {text, mimeType}');
  }
  const { text, mimeType = 'text/plain', ...rest } = value as Record<string, unknown>;
  if (Object.keys(rest).length > 0) throw new SignMessageError('signMessage has only text and mimeType');
  if (!SIGN_MESSAGE_MIME_TYPES.includes(mimeType as SignMessageMimeType)) {
    throw new SignMessageError(`signMessage.mimeType must be one of ${SIGN_MESSAGE_MIME_TYPES.join(', ')}`);
  }
  if (typeof text !== 'string' || text.trim().length === 0) {
    throw new SignMessageError('signMessage.text must be a non-blank string');
  }
  if ([...text].length > MAX_SIGN_MESSAGE_LENGTH) {
    throw new SignMessageError(`signMessage.text must be at most ${MAX_SIGN_MESSAGE_LENGTH} characters`);
  }
  if (FORBIDDEN.test(text)) {
    throw new SignMessageError(
      'signMessage.text must not contain control characters (other than tab and line feed), bidirectional overrides or lone surrogates',
    );
  }
  return { text, mimeType: mimeType as SignMessageMimeType };
}

/**
 * What identifies a message everywhere it is bound or recorded: lower-case hex SHA-256 of the UTF-8 of
 * `mimeType + "\n" + text`. The identity provider computes the same over the message it displayed.
 */
export function signMessageHash(message: SignMessage): string {
  return createHash('sha256').update(`${message.mimeType}\n${message.text}`, 'utf8').digest('hex');
}
