/**
 * The client module restates the nonce rule so an e-service can copy it alone: it must stay the service's.
 */
import fc from 'fast-check';
import { assertionNonce, type DigestAlgorithm } from '../../../lambdas/core/src';
import { signRequestNonce } from '../src/signing-client';

test("the client's nonce is the service's binding, for any request id, algorithm and digest", () => {
  fc.assert(
    fc.property(
      fc.uuid(),
      fc.constantFrom<DigestAlgorithm>('SHA-256', 'SHA-384', 'SHA-512'),
      fc.uint8Array({ minLength: 32, maxLength: 64 }),
      (requestId, digestAlgorithm, bytes) => {
        const digest = Buffer.from(bytes).toString('base64');
        expect(signRequestNonce(requestId.toUpperCase(), digestAlgorithm, digest)).toBe(
          assertionNonce({ requestId, digestAlgorithm, digest }),
        );
      },
    ),
  );
});
