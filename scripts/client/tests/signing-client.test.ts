/**
 * The client module restates the nonce rule and the default signature algorithm so an e-service can copy
 * it alone: both must stay the service's.
 */
import fc from 'fast-check';
import {
  ADES_PROFILES,
  KEY_TYPES,
  SIGNATURE_ALGORITHMS,
  SIGN_MESSAGE_MIME_TYPES,
  assertionNonce,
  defaultSignatureAlgorithm as serviceDefault,
  signMessageHash as serviceSignMessageHash,
  type DigestAlgorithm,
} from '@pipeline/core';
import { defaultSignatureAlgorithm, signMessageHash, signRequestNonce } from '../src/signing-client';

test("the client's nonce is the service's binding, for any request and way of signing", () => {
  fc.assert(
    fc.property(
      fc.uuid(),
      fc.constantFrom<DigestAlgorithm>('SHA-256', 'SHA-384', 'SHA-512'),
      fc.uint8Array({ minLength: 32, maxLength: 64 }),
      fc.constantFrom(...KEY_TYPES),
      fc.constantFrom(...SIGNATURE_ALGORITHMS),
      fc.option(fc.constantFrom(...ADES_PROFILES), { nil: undefined }),
      fc.option(
        fc.record({
          text: fc.string({ minLength: 1 }),
          mimeType: fc.constantFrom(...SIGN_MESSAGE_MIME_TYPES),
        }),
        {
          nil: undefined,
        },
      ),
      (requestId, digestAlgorithm, bytes, keyType, signatureAlgorithm, profile, signMessage) => {
        const digest = Buffer.from(bytes).toString('base64');
        const format = profile ? ('cms' as const) : ('raw' as const);
        const binding = { digestAlgorithm, digest, keyType, signatureAlgorithm, format, profile };
        expect(signRequestNonce({ requestId: requestId.toUpperCase(), ...binding, signMessage })).toBe(
          assertionNonce({
            requestId,
            ...binding,
            ...(signMessage ? { signMessageHash: serviceSignMessageHash(signMessage) } : {}),
          }),
        );
      },
    ),
  );
});

test("the client's default signature algorithm is the service's, for every key type", () => {
  for (const keyType of KEY_TYPES) expect(defaultSignatureAlgorithm(keyType)).toBe(serviceDefault(keyType));
});

test("the client's sign message hash is the service's; text/plain is the default MIME type", () => {
  fc.assert(
    fc.property(
      fc.string({ unit: 'grapheme' }),
      fc.constantFrom(...SIGN_MESSAGE_MIME_TYPES),
      (text, mimeType) => {
        expect(signMessageHash({ text, mimeType })).toBe(serviceSignMessageHash({ text, mimeType }));
      },
    ),
  );
  expect(signMessageHash({ text: 'a' })).toBe(serviceSignMessageHash({ text: 'a', mimeType: 'text/plain' }));
});
