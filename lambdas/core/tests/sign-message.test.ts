/**
 * The sign message's rules, its hash, how it joins the binding, and the pure checks of a sign approval.
 * The JWS side of an approval is in lambdas/adapters/oidc/tests/verifier.test.ts.
 */
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import openapi from '../../api/openapi.json';
import {
  AssertionError,
  MAX_SIGN_MESSAGE_LENGTH,
  SIGN_MESSAGE_TEXT_PATTERN,
  SignMessageError,
  assertionNonce,
  bindingLines,
  bindingOf,
  checkSignApproval,
  expectedApproval,
  signMessageHash,
  validateSignMessage,
  type AssertionBinding,
  type AssertionPolicy,
} from '../src/identity';

const BINDING: AssertionBinding = {
  requestId: '0B7D2A4E-9F3C-4D1A-8E2B-5C6D7E8F9A0B',
  digestAlgorithm: 'SHA-256',
  digest: Buffer.alloc(32, 7).toString('base64'),
  keyType: 'EC-P256',
  signatureAlgorithm: 'ECDSA',
  format: 'cms',
  profile: 'PAdES-B-B',
};

test('the hash is SHA-256 hex of mimeType, a line feed and the text, in UTF-8', () => {
  const message = { text: 'Jag godkänner', mimeType: 'text/plain' as const };
  expect(signMessageHash(message)).toBe(
    createHash('sha256').update(Buffer.from('text/plain\nJag godkänner', 'utf8')).digest('hex'),
  );
  // The MIME type is part of it: the same text rendered as Markdown is another message.
  expect(signMessageHash({ ...message, mimeType: 'text/markdown' })).not.toBe(signMessageHash(message));
});

test('the binding gains a ninth line only with a message: without one, nonces are unchanged', () => {
  const lines = bindingLines(BINDING);
  expect(lines).toHaveLength(8);
  expect(lines[0]).toBe('hsm-signing-pipeline/sign-request/v2');
  expect(lines[1]).toBe(BINDING.requestId.toLowerCase());
  const hash = 'ab'.repeat(32);
  expect(bindingLines({ ...BINDING, signMessageHash: hash })).toEqual([...lines, hash]);
  expect(assertionNonce({ ...BINDING, signMessageHash: hash })).toBe(
    createHash('sha256')
      .update([...lines, hash].join('\n'))
      .digest('base64url'),
  );
  expect(assertionNonce({ ...BINDING, signMessageHash: hash })).not.toBe(assertionNonce(BINDING));
});

test("a record's binding carries its sign message hash, and the approval it asks for names the digest", () => {
  const record = {
    id: BINDING.requestId,
    digestAlgorithm: BINDING.digestAlgorithm,
    digest: BINDING.digest,
    keyType: BINDING.keyType,
    signatureAlgorithm: BINDING.signatureAlgorithm,
    format: BINDING.format,
    profile: BINDING.profile,
  };
  expect(bindingOf(record).signMessageHash).toBeUndefined();
  expect(expectedApproval(bindingOf(record))).toBeUndefined();
  const hash = 'cd'.repeat(32);
  expect(bindingOf({ ...record, signMessageHash: hash }).signMessageHash).toBe(hash);
  expect(expectedApproval(bindingOf({ ...record, signMessageHash: hash }))).toEqual({
    tbsData: BINDING.digest,
    signMessageHash: hash,
  });
});

describe('validateSignMessage', () => {
  test('accepts text up to the bound (characters, not UTF-16 units) with tab and line feed; defaults to text/plain', () => {
    expect(validateSignMessage({ text: 'Rad 1\n\tRad 2' })).toEqual({
      text: 'Rad 1\n\tRad 2',
      mimeType: 'text/plain',
    });
    const emoji = '😀'.repeat(MAX_SIGN_MESSAGE_LENGTH);
    expect(validateSignMessage({ text: emoji, mimeType: 'text/markdown' }).text).toBe(emoji);
    // Variation selectors stay (an emoji's presentation), and count as nothing visible on their own.
    expect(validateSignMessage({ text: 'Jag \u2764\ufe0f avtalet' }).text).toBe('Jag \u2764\ufe0f avtalet');
  });

  test.each<[string, unknown]>([
    ['null', null],
    ['an array', [{ text: 'a' }]],
    ['a string', 'a'],
    ['no text', {}],
    ['blank text', { text: '\u00a0\n ' }],
    ['text too long', { text: 'a'.repeat(MAX_SIGN_MESSAGE_LENGTH + 1) }],
    ['a NUL', { text: 'a\u0000' }],
    ['a carriage return', { text: 'a\rb' }],
    ['a C1 control', { text: 'a\u0085b' }],
    ['a right-to-left override', { text: 'a\u202eb' }],
    ['a first-strong isolate', { text: 'a\u2068b' }],
    ['a lone high surrogate', { text: 'a\ud83d' }],
    ['a lone low surrogate', { text: '\ude00a' }],
    ['a left-to-right mark', { text: 'a\u200eb' }],
    ['a right-to-left mark', { text: 'a\u200fb' }],
    ['an Arabic letter mark', { text: 'a\u061cb' }],
    ['a zero-width space', { text: 'a\u200bb' }],
    ['a zero-width non-joiner', { text: 'a\u200cb' }],
    ['a zero-width joiner', { text: 'a\u200db' }],
    ['a word joiner', { text: 'a\u2060b' }],
    ['an invisible plus', { text: '1\u20642' }],
    ['a byte order mark', { text: '\ufeffa' }],
    ['a soft hyphen', { text: 'a\u00adb' }],
    ['a tag character', { text: 'a\u{e0041}' }],
    ['a cancel tag', { text: 'a\u{e007f}' }],
    ['a Hangul filler', { text: 'a\u3164' }],
    ['a line separator', { text: 'a\u2028b' }],
    ['only invisible characters', { text: '\u3164\u200b\u2060' }],
    ['only a variation selector and blanks', { text: '\ufe0f \u2800\u3000' }],
    ['another MIME type', { text: 'a', mimeType: 'text/html' }],
    ['another field', { text: 'a', lang: 'sv' }],
  ])('refuses %s', (_name, value) => {
    expect(() => validateSignMessage(value)).toThrow(SignMessageError);
  });

  test('openapi.json states the same rule (pattern and length) as this module', () => {
    const text = openapi.components.schemas.SignRequestInput.properties.signMessage.properties.text;
    expect(text.pattern).toBe(SIGN_MESSAGE_TEXT_PATTERN);
    expect(text.maxLength).toBe(MAX_SIGN_MESSAGE_LENGTH);
  });

  test('the pattern is one every engine reads alike: no \\u{...}, no surrogates, no \\s or \\p, nothing beyond the BMP', () => {
    // Lone surrogates (escaped or not): a regular expression over code points has none. A character
    // beyond the BMP in a class is two UTF-16 units without the u flag: a range of them is no regex.
    expect(SIGN_MESSAGE_TEXT_PATTERN).not.toMatch(
      /\\u\{|\\u[dD][89a-fA-F]|\\s|\\p|[\uD800-\uDFFF]|[\u{10000}-\u{10FFFF}]/u,
    );
    expect(() => new RegExp(SIGN_MESSAGE_TEXT_PATTERN)).not.toThrow();
  });

  test('property: without and with the u flag, the pattern and validateSignMessage agree on every text of the BMP within the length; beyond it the pattern accepts all the rule does', () => {
    const patterns = [new RegExp(SIGN_MESSAGE_TEXT_PATTERN), new RegExp(SIGN_MESSAGE_TEXT_PATTERN, 'u')];
    const wellFormed = (text: string): boolean => !/[\uD800-\uDFFF]/u.test(text);
    const bmp = (text: string): boolean => !/[\u{10000}-\u{10FFFF}]/u.test(text);
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ unit: 'grapheme', maxLength: 40 }),
          fc.string({ unit: 'binary', maxLength: 40 }),
          fc.string({
            unit: fc.constantFrom(
              'a',
              ' ',
              '\n',
              '\t',
              '\r',
              '\u202e',
              '\ud800',
              '\u0085',
              '\u200b',
              '\u200e',
              '\u3164',
              '\ufe0f',
              '\u2800',
              '\u{e0041}',
              '\u{e0101}',
              '\u{1d173}',
              '\u{1f600}',
            ),
            maxLength: 8,
          }),
        ),
        (text) => {
          let accepted = true;
          try {
            validateSignMessage({ text });
          } catch {
            accepted = false;
          }
          for (const pattern of patterns) {
            const matches = text.length > 0 && pattern.test(text);
            if (bmp(text) && wellFormed(text)) expect(accepted).toBe(matches);
            else if (accepted) expect(matches).toBe(true);
          }
        },
      ),
      { numRuns: 2000 },
    );
  });

  test.each([
    ['a tag character', 'a\u{e0041}'],
    ['a musical format control', 'a\u{1d173}'],
    ['only a supplementary variation selector', '\u{e0101}'],
  ])('the pattern lets %s through, the rule refuses it (documented in openapi.json)', (_name, text) => {
    expect(new RegExp(SIGN_MESSAGE_TEXT_PATTERN, 'u').test(text)).toBe(true);
    expect(() => validateSignMessage({ text })).toThrow(SignMessageError);
  });
});

describe('checkSignApproval', () => {
  const POLICY: AssertionPolicy = {
    audience: 'signing-service',
    clockSkewSeconds: 60,
    maxAuthAgeSeconds: 600,
    acceptedAcr: [],
    maxLifetimeSeconds: 3600,
    maxAuthGapSeconds: 30,
  };
  const login = { issuer: 'https://idp', subject: 's1', nonce: 'n1', authTime: 1000, issuedAt: 1010 };
  const expected = { tbsData: 'ZGlnZXN0', signMessageHash: 'ef'.repeat(32) };
  const approval = {
    iss: 'https://idp',
    sub: 's1',
    aud: ['signing-service', 'other'],
    iat: 1005,
    nonce: 'n1',
    tbs_data: 'ZGlnZXN0',
    sign_message_hash: 'ef'.repeat(32),
  };
  const code = (payload: Record<string, unknown>): string | undefined => {
    try {
      checkSignApproval(payload, login, expected, POLICY);
      return undefined;
    } catch (err) {
      return (err as AssertionError).code;
    }
  };

  test('accepts an approval of this login, message and data (within the clock skew of the login and token)', () => {
    expect(code(approval)).toBeUndefined();
    expect(code({ ...approval, iat: 1000 - 60 })).toBeUndefined();
    expect(code({ ...approval, iat: 1010 + 60 })).toBeUndefined();
  });

  test.each<[string, Record<string, unknown>, string]>([
    ['issuer', { iss: 'https://other' }, 'ASSERTION_APPROVAL_INVALID'],
    ['subject', { sub: 's2' }, 'ASSERTION_APPROVAL_INVALID'],
    ['nonce', { nonce: 'n2' }, 'ASSERTION_APPROVAL_INVALID'],
    ['audience', { aud: 'other' }, 'ASSERTION_APPROVAL_INVALID'],
    ['no audience', { aud: undefined }, 'ASSERTION_APPROVAL_INVALID'],
    ['time before the login', { iat: 1000 - 61 }, 'ASSERTION_APPROVAL_INVALID'],
    ['time after the token', { iat: 1010 + 61 }, 'ASSERTION_APPROVAL_INVALID'],
    ['time not a number', { iat: '1005' }, 'ASSERTION_APPROVAL_INVALID'],
    ['data', { tbs_data: 'b3RoZXI=' }, 'ASSERTION_APPROVAL_MISMATCH'],
    ['message', { sign_message_hash: '00'.repeat(32) }, 'ASSERTION_APPROVAL_MISMATCH'],
  ])('refuses another %s', (_name, change, expectedCode) => {
    expect(code({ ...approval, ...change })).toBe(expectedCode);
  });
});
