/**
 * The client module restates the nonce rule and the default signature algorithm so an e-service can copy
 * it alone: both must stay the service's.
 */
import fc from 'fast-check';
import {
  ADES_PROFILES,
  KEY_TYPES,
  SIGNATURE_ALGORITHMS,
  assertionNonce,
  defaultSignatureAlgorithm as serviceDefault,
  type DigestAlgorithm,
} from '../../../lambdas/core/src';
import { defaultSignatureAlgorithm, signRequestNonce } from '../src/signing-client';

test("the client's nonce is the service's binding, for any request and way of signing", () => {
  fc.assert(
    fc.property(
      fc.uuid(),
      fc.constantFrom<DigestAlgorithm>('SHA-256', 'SHA-384', 'SHA-512'),
      fc.uint8Array({ minLength: 32, maxLength: 64 }),
      fc.constantFrom(...KEY_TYPES),
      fc.constantFrom(...SIGNATURE_ALGORITHMS),
      fc.option(fc.constantFrom(...ADES_PROFILES), { nil: undefined }),
      (requestId, digestAlgorithm, bytes, keyType, signatureAlgorithm, profile) => {
        const digest = Buffer.from(bytes).toString('base64');
        const format = profile ? ('cms' as const) : ('raw' as const);
        const binding = { digestAlgorithm, digest, keyType, signatureAlgorithm, format, profile };
        expect(signRequestNonce({ requestId: requestId.toUpperCase(), ...binding })).toBe(
          assertionNonce({ requestId, ...binding }),
        );
      },
    ),
  );
});

test("the client's default signature algorithm is the service's, for every key type", () => {
  for (const keyType of KEY_TYPES) expect(defaultSignatureAlgorithm(keyType)).toBe(serviceDefault(keyType));
});
