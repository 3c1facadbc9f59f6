/**
 * The CSR template against the full schema encoding: for random identities (names in several scripts,
 * lengths across the DER length-octet boundaries; and values the profile refuses) and random public keys
 * of every key type (canonical, other encodings of a key, no key at all), buildCsr gives byte for byte
 * what buildCsrBySchema encodes, or fails the same way. And nameDerOf is encodeName's DER for any string.
 */
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { AsnConvert } from '@peculiar/asn1-schema';
import { KEY_TYPES } from '@pipeline/core/shared';
import type { SignerIdentity } from '@pipeline/core/identity';
import { buildCsr, buildCsrBySchema } from '../src/csr';
import { keyTypeOfSpki } from '../src/algorithms';
import { encodeName, nameDerOf } from '../src/name';
import { realKeys, spkiInputs } from '../../test-support/spki-arbitraries';

const keys = realKeys();

/** Letters and marks of several scripts, 1 to 3 octets in UTF-8 (with a 4-octet one). */
const LETTERS = [...'abcxyzABCXYZåäöÅÄÖéüßøæłŁžαβγΩжЖяאבשعربي中文字日本語한국어𝒜', 'e\u0301'];
const word = fc.array(fc.constantFrom(...LETTERS), { minLength: 1, maxLength: 12 }).map((l) => l.join(''));
const personName = fc
  .tuple(
    word,
    fc.array(fc.tuple(fc.constantFrom(' ', '-', "'", '.', '\u2019', '. '), word), { maxLength: 6 }),
  )
  .map(([first, rest]) => first + rest.map(([sep, w]) => sep + w).join(''));
const serialNumber = fc
  .array(fc.stringMatching(/^[A-Za-z0-9]{1,20}$/), { minLength: 1, maxLength: 3 })
  .map((parts) => parts.join('-'));
/** Mostly valid identities; now and then a value the profile refuses (both paths must refuse it). */
const value = (valid: fc.Arbitrary<string>): fc.Arbitrary<string> =>
  fc.oneof(
    { weight: 12, arbitrary: valid },
    { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 70 }) },
  );
const identity: fc.Arbitrary<SignerIdentity> = fc.record({
  commonName: value(personName),
  givenName: value(personName),
  surname: value(personName),
  serialNumber: value(serialNumber),
  country: value(fc.constantFrom('SE', 'NO', 'DE', 'FR', 'JP')),
});

const sign = async (digest: Buffer): Promise<Buffer> =>
  Promise.resolve(createHash('sha512').update(digest).digest());

async function outcome(build: typeof buildCsr, input: Parameters<typeof buildCsr>[0]) {
  try {
    return { der: await build(input) };
  } catch (err) {
    return { error: `${(err as Error).name}: ${(err as Error).message}` };
  }
}

test('buildCsr is byte-identical to the schema encoding, for random subjects and keys of every key type', async () => {
  const seen = { built: 0, refused: 0 };
  const types = new Set<string>();
  await fc.assert(
    fc.asyncProperty(
      identity,
      spkiInputs(keys),
      fc.constantFrom(...KEY_TYPES),
      async (subject, spki, other) => {
        const keyType = keyTypeOfSpki(spki) ?? other;
        const input = { subject, keyType, publicKeySpki: spki, sign };
        const [template, schema] = [await outcome(buildCsr, input), await outcome(buildCsrBySchema, input)];
        expect(template).toEqual(schema);
        if (template.der) {
          seen.built++;
          types.add(keyType);
        } else seen.refused++;
      },
    ),
    { numRuns: 1500 },
  );
  // About a third of the random inputs build (1500 runs: 474-517 seen); the rest are refused alike.
  expect(seen.built).toBeGreaterThan(350);
  expect(seen.refused).toBeGreaterThan(50);
  expect([...types].sort()).toEqual([...KEY_TYPES].sort());
});

test('nameDerOf is the DER of encodeName for any values, both kinds, every length class', () => {
  const attribute = fc.record({
    oid: fc.constantFrom(
      '2.5.4.6',
      '2.5.4.4',
      '2.5.4.42',
      '2.5.4.5',
      '2.5.4.3',
      '1.2.840.113549.1.9.1',
      '2.5.4.97',
    ),
    kind: fc.constantFrom('utf8String' as const, 'printableString' as const),
    value: fc.oneof(
      fc.string({ unit: 'binary', minLength: 1, maxLength: 100 }),
      fc.string({ unit: 'grapheme', minLength: 1, maxLength: 300 }),
      fc.string({ minLength: 120, maxLength: 140 }),
    ),
  });
  fc.assert(
    fc.property(fc.array(attribute, { maxLength: 8 }), (attributes) => {
      let schema: Buffer | string;
      try {
        schema = Buffer.from(AsnConvert.serialize(encodeName(attributes)));
      } catch (err) {
        schema = (err as Error).name;
      }
      let spliced: Buffer | string;
      try {
        spliced = nameDerOf(attributes);
      } catch (err) {
        spliced = (err as Error).name;
      }
      expect(spliced).toEqual(schema);
    }),
    { numRuns: 2000 },
  );
});
