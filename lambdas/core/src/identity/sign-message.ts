import { createHash } from 'node:crypto';
import { ClientVisibleError } from '../shared/errors';

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
 * Characters of the message the citizen approves for several documents: the e-service's text (at most
 * MAX_SIGN_MESSAGE_LENGTH) followed by the list of the documents (composeSignMessage).
 */
export const MAX_COMPOSED_SIGN_MESSAGE_LENGTH = 8000;

/** A range of code points (inclusive), or one code point. */
type CodePoints = readonly [number, number] | number;

/**
 * Never in a message, so that what the citizen sees is what the hash names:
 * - C0 controls but tab and line feed (so one line break, "\n"), DEL, C1 controls, and the other line
 *   breaks (U+2028, U+2029);
 * - the directional formatting characters: overrides, embeddings and isolates (U+202A-U+202E,
 *   U+2066-U+2069), which make the displayed order of the text differ from its stored order, and the
 *   invisible direction marks (U+200E, U+200F, U+061C);
 * - zero-width and other invisible characters (the default-ignorable code points but the variation
 *   selectors, which emoji and some scripts need): U+00AD, U+034F, the Hangul fillers (U+115F, U+1160,
 *   U+3164, U+FFA0), U+17B4-U+17B5, U+180E, U+200B-U+200D, U+2060-U+206F, U+FEFF, U+FFF0-U+FFFB, the
 *   shorthand and musical format controls, and the tag characters (U+E0000-U+E00FF, U+E01F0-U+E0FFF).
 */
const FORBIDDEN_CODE_POINTS: readonly CodePoints[] = [
  [0x00, 0x08],
  [0x0b, 0x1f],
  [0x7f, 0x9f],
  0xad,
  0x34f,
  0x61c,
  [0x115f, 0x1160],
  [0x17b4, 0x17b5],
  0x180e,
  [0x200b, 0x200f],
  [0x2028, 0x2029],
  [0x202a, 0x202e],
  [0x2060, 0x206f],
  0x3164,
  0xfeff,
  0xffa0,
  [0xfff0, 0xfffb],
  [0x1bca0, 0x1bca3],
  [0x1d173, 0x1d17a],
  [0xe0000, 0xe00ff],
  [0xe01f0, 0xe0fff],
];

/**
 * Allowed, but shows nothing on its own: white space (as the regular expression class \s) and the
 * variation selectors (U+180B-U+180D, U+180F, U+FE00-U+FE0F, U+E0100-U+E01EF), and the blank Braille
 * pattern (U+2800). A message needs one character that is neither this nor forbidden: "not blank".
 */
const SHOWS_NOTHING: readonly CodePoints[] = [
  0x09,
  0x0a,
  0x20,
  0xa0,
  0x1680,
  [0x180b, 0x180d],
  0x180f,
  [0x2000, 0x200a],
  0x202f,
  0x205f,
  0x2800,
  0x3000,
  [0xfe00, 0xfe0f],
  [0xe0100, 0xe01ef],
];

/**
 * The contents of a character class: \uXXXX escapes for the Basic Multilingual Plane, the characters
 * themselves beyond it. No \u{...} (Python and other engines do not read it) and no surrogate escapes (a
 * regular expression over code points has none).
 */
function classOf(points: readonly CodePoints[]): string {
  const one = (c: number): string =>
    c > 0xffff ? String.fromCodePoint(c) : `\\u${c.toString(16).toUpperCase().padStart(4, '0')}`;
  return points.map((p) => (typeof p === 'number' ? one(p) : `${one(p[0])}-${one(p[1])}`)).join('');
}

/**
 * The code points of the Basic Multilingual Plane only, for the document's patterns: a class with a
 * range beyond it (two UTF-16 units each end) is no regular expression without ECMAScript's `u` flag,
 * which generated clients compile without. What lies beyond (the tag, shorthand and musical format
 * characters, the supplementary variation selectors) the patterns let through and the rule refuses.
 */
function bmpOf(points: readonly CodePoints[]): CodePoints[] {
  return points.filter((p) => (typeof p === 'number' ? p : p[0]) <= 0xffff);
}

const FORBIDDEN_CLASS = classOf(FORBIDDEN_CODE_POINTS);
const FORBIDDEN = new RegExp(`[${FORBIDDEN_CLASS}]`, 'u');
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;
const SHOWS_NOTHING_CLASS = classOf(SHOWS_NOTHING);
const SHOWS_SOMETHING = new RegExp(`[^${SHOWS_NOTHING_CLASS}${FORBIDDEN_CLASS}]`, 'u');

/**
 * The shape of the document's patterns over the BMP classes `nothing` (shows nothing) and `forbidden`:
 * the first character that shows something, alone or after characters that show nothing, then any but
 * the forbidden ones (one way to match a text: no backtracking). The alternation is not a style: a
 * length-bounded pattern of one sequence is rewritten by schemathesis into a spelling of its own.
 */
function textPattern(nothing: string, forbidden: string): string {
  const something = `[^${nothing}${forbidden}]`;
  return `^(?:${something}|[${nothing}]+${something})[^${forbidden}]*$`;
}

/**
 * openapi.json's pattern for signMessage.text: the character rule over the Basic Multilingual Plane, a
 * regular expression every engine reads alike, with or without ECMAScript's `u` flag (Python, Java,
 * generated clients). Beyond the BMP it lets every character through: the rule (characterProblem)
 * also refuses the forbidden ones there, and a text of only supplementary variation selectors and
 * blanks, and lone surrogates, which tools whose strings are code points (Python, Rust) cannot state.
 */
export const SIGN_MESSAGE_TEXT_PATTERN = textPattern(
  classOf(bmpOf(SHOWS_NOTHING)),
  classOf(bmpOf(FORBIDDEN_CODE_POINTS)),
);

/**
 * openapi.json's pattern for a document's name: the sign message's (see SIGN_MESSAGE_TEXT_PATTERN)
 * with tab and line feed forbidden too (a name is one line).
 */
export const DOCUMENT_NAME_PATTERN = textPattern(
  classOf(bmpOf(SHOWS_NOTHING.filter((p) => p !== 0x09 && p !== 0x0a))),
  classOf(bmpOf([0x09, 0x0a, ...FORBIDDEN_CODE_POINTS])),
);

export class SignMessageError extends ClientVisibleError {
  public override readonly name = 'SignMessageError';
  public constructor(message: string) {
    super(message, 'SIGN_MESSAGE_INVALID');
  }
}

/**
 * The message as the API, the CA and the identity provider accept it: `text` of 1 to
 * MAX_SIGN_MESSAGE_LENGTH characters, well-formed Unicode, none of the forbidden characters, one visible
 * character at least; `mimeType` text/plain (default) or text/markdown.
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
  if (typeof text !== 'string') throw new SignMessageError('signMessage.text must be a string');
  if ([...text].length > MAX_SIGN_MESSAGE_LENGTH) {
    throw new SignMessageError(`signMessage.text must be at most ${MAX_SIGN_MESSAGE_LENGTH} characters`);
  }
  const problem = characterProblem(text);
  if (problem) throw new SignMessageError(`signMessage.text ${problem}`);
  return { text, mimeType: mimeType as SignMessageMimeType };
}

/** Why a text breaks the sign message's character rule (forbidden characters, blank), or undefined. */
export function characterProblem(text: string): string | undefined {
  if (FORBIDDEN.test(text) || LONE_SURROGATE.test(text)) {
    return 'must not contain control characters (other than tab and line feed), line separators, direction marks or overrides, invisible (zero-width, filler, tag) characters or lone surrogates';
  }
  if (!SHOWS_SOMETHING.test(text)) return 'must not be blank (it needs a visible character)';
  return undefined;
}

/** What the composed message lists of a document: its name, or its digest when it has none. */
export interface ListedDocument {
  readonly name?: string;
  readonly digestAlgorithm: string;
  readonly digest: string;
}

/**
 * ASCII punctuation: CommonMark lets a backslash escape each of these (and only these), and any of them
 * may start markup (`&` an entity, `<` an autolink, `=` and `-` a heading's underline, `.` and `)` an
 * ordered list's marker after digits, ...).
 */
const ASCII_PUNCTUATION = /[!-/:-@[-`{-~]/g;
/** White space at either end of a name: a Markdown parser strips it there (and indents code with it). */
const EDGE_WHITE_SPACE = /^\s+|\s+$/gu;

/**
 * A document's name as CommonMark text that shows exactly the name: ASCII punctuation backslash-escaped,
 * white space at either end as numeric character references.
 */
function markdownLiteral(name: string): string {
  return name
    .replace(ASCII_PUNCTUATION, (c) => `\\${c}`)
    .replace(EDGE_WHITE_SPACE, (run) =>
      [...run].map((c) => `&#x${c.codePointAt(0)!.toString(16).toUpperCase()};`).join(''),
    );
}

/**
 * The message the citizen approves for several documents: the e-service's text, an empty line, then
 * "Documents (N):" and one numbered line per document, its name (as markdownLiteral for
 * text/markdown) or, unnamed, "unnamed (<digestAlgorithm> <first 16 characters of the digest>...)".
 * The MIME type is the e-service's. SIGN_MESSAGE_INVALID beyond MAX_COMPOSED_SIGN_MESSAGE_LENGTH.
 */
export function composeSignMessage(message: SignMessage, documents: readonly ListedDocument[]): SignMessage {
  const label = (d: ListedDocument): string =>
    d.name === undefined
      ? `unnamed (${d.digestAlgorithm} ${d.digest.slice(0, 16)}...)`
      : message.mimeType === 'text/markdown'
        ? markdownLiteral(d.name)
        : d.name;
  const lines = documents.map((d, i) => `${i + 1}. ${label(d)}`);
  const text = `${message.text}\n\nDocuments (${documents.length}):\n${lines.join('\n')}`;
  if ([...text].length > MAX_COMPOSED_SIGN_MESSAGE_LENGTH) {
    throw new SignMessageError(
      `the sign message with the list of the documents must be at most ${MAX_COMPOSED_SIGN_MESSAGE_LENGTH} characters`,
    );
  }
  return { text, mimeType: message.mimeType };
}

/**
 * What identifies a message everywhere it is bound or recorded: lower-case hex SHA-256 of the UTF-8 of
 * `mimeType + "\n" + text`. The identity provider computes the same over the message it displayed.
 */
export function signMessageHash(message: SignMessage): string {
  return createHash('sha256').update(`${message.mimeType}\n${message.text}`, 'utf8').digest('hex');
}
