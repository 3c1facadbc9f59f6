/**
 * The document's identityAssertion pattern admits exactly the spellings the ID token verifier decodes:
 * three segments of canonical base64url (no length of 1 mod 4, the unused bits of the last character
 * zero), the first two not empty. A schema-valid token is then never refused for its encoding, and the
 * gateway (Java regular expressions) and the handler (ajv) refuse the same ones.
 */
import Ajv from 'ajv';
import fc from 'fast-check';
import { AssertionError, SWEDISH_CLAIM_MAPPING } from '@pipeline/core/identity';
import { JwsAssertionVerifier } from '@pipeline/adapters/oidc';
import openapi from '../openapi.json';

const ajv = new Ajv({ allErrors: false, strict: false });
ajv.addSchema(openapi, 'openapi.json');
const schemaValid = ajv.compile({
  $ref: 'openapi.json#/components/schemas/SignRequestInput/properties/identityAssertion',
});

const verifier = new JwsAssertionVerifier({
  issuers: new Map(),
  algorithms: ['RS256'],
  policy: {
    audience: 'test',
    clockSkewSeconds: 60,
    maxAuthAgeSeconds: 600,
    maxAuthGapSeconds: 30,
    acceptedAcr: [],
    maxLifetimeSeconds: 3600,
  },
  mapping: SWEDISH_CLAIM_MAPPING,
  maxLength: 8192,
});

/** Whether the verifier refuses the token for its spelling rather than for what it decodes to. */
async function refusedForEncoding(token: string): Promise<boolean> {
  try {
    await verifier.verify(token, 'nonce');
  } catch (err) {
    if (err instanceof AssertionError) return /compact JWS|canonical base64url/.test(err.message);
    throw err;
  }
  return false;
}

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const segment = fc.string({ unit: fc.constantFrom(...ALPHABET), maxLength: 11 });

test.each([
  ['0.b.pA', 'a one-character segment (length 1 mod 4) holds no whole byte'],
  ['eyJh.eyJhbGc.AAAAB', 'a signature of length 1 mod 4'],
  ['eyJhbB.eyJh.AAAA', 'length 2 mod 4, last character not one of AQgw'],
  ['eyJh.eyJhbGd.AAAA', 'length 3 mod 4, last character not one of AEIMQUYcgkosw048'],
  ['.eyJh.AAAA', 'an empty header'],
])('%s is not schema-valid, and the verifier refuses it for its spelling: %s', async (token) => {
  expect(schemaValid(token)).toBe(false);
  expect(await refusedForEncoding(token)).toBe(true);
});

test('property: a token over the base64url alphabet is schema-valid exactly when the verifier decodes its segments', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.oneof(
        fc.tuple(segment, segment, segment).map((parts) => parts.join('.')),
        fc.string({ unit: fc.constantFrom(...ALPHABET, '.'), maxLength: 20 }),
      ),
      async (token) => {
        expect({ token, schemaValid: schemaValid(token) }).toEqual({
          token,
          schemaValid: !(await refusedForEncoding(token)),
        });
      },
    ),
    { numRuns: 2000 },
  );
});

test('property: the base64url of any header, payload and signature bytes is schema-valid', () => {
  fc.assert(
    fc.property(
      fc.uint8Array({ minLength: 1, maxLength: 40 }),
      fc.uint8Array({ minLength: 1, maxLength: 40 }),
      fc.uint8Array({ maxLength: 40 }),
      (header, payload, signature) => {
        const token = [header, payload, signature].map((b) => Buffer.from(b).toString('base64url')).join('.');
        expect({ token, schemaValid: schemaValid(token) }).toEqual({ token, schemaValid: true });
      },
    ),
    { numRuns: 1000 },
  );
});
