/** fast-check generators of malformed and hostile sign request bodies (shared by unit and HTTP tests). */
import fc from 'fast-check';

const validSigner = {
  commonName: 'Anna Berg',
  givenName: 'Anna',
  surname: 'Berg',
  serialNumber: '197001011234',
  country: 'SE',
};
/** Valid in shape; the assertion is not a real token (no issuer signed it). */
const validBody = {
  requestId: '6f1c2a9e-3b4d-4c5e-8f6a-7b8c9d0e1f2a',
  digest: Buffer.alloc(32, 1).toString('base64'),
  digestAlgorithm: 'SHA-256',
  keyType: 'EC-P256',
  identityAssertion: 'eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJ4In0.c2ln',
};

/** Strings an attacker would try: injections, controls, huge, odd Unicode, lone surrogates. */
const nasty = fc.oneof(
  fc.string({ maxLength: 70 }),
  fc.string({ unit: 'binary', maxLength: 70 }),
  fc.constantFrom(
    'x,CN=evil',
    'a+b=c',
    '\u0000',
    '\u202e',
    '\ud800',
    '${jndi:ldap://x}',
    '<script>',
    "'; DROP TABLE x; --",
    'A'.repeat(10_000),
    '../../etc/passwd',
    '%00',
  ),
);

const anyJson: fc.Arbitrary<unknown> = fc.jsonValue({ maxDepth: 3 });

/**
 * A valid body with one field replaced by something hostile, or removed, or an unknown field added; or
 * with a signer named beside the assertion (always refused), itself hostile or not.
 */
const mutated = fc
  .tuple(
    fc.constantFrom(
      'digest',
      'digestAlgorithm',
      'keyType',
      'signatureAlgorithm',
      'format',
      'profile',
      'requestId',
      'identityAssertion',
      'extra',
    ),
    fc.constantFrom('commonName', 'givenName', 'surname', 'serialNumber', 'country', 'extra'),
    fc.oneof(nasty, anyJson, fc.constant(undefined)),
    fc.boolean(),
  )
  .map(([field, signerField, value, withSigner]) => {
    if (withSigner) return { ...validBody, signer: { ...validSigner, [signerField]: value } };
    return { ...validBody, [field]: value };
  });

export function hostileBody(): fc.Arbitrary<string> {
  return fc.oneof(
    mutated.map((b) => JSON.stringify(b)),
    anyJson.map((v) => JSON.stringify(v)),
    nasty,
    fc.string({ maxLength: 200 }).map((s) => `{"digest":${s}`),
  );
}
