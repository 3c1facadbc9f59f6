/**
 * The canonical-layout fast path of canonicalPublicKey against the full parse (parsedPublicKey): for
 * real keys of every key type, the other encodings of those keys, other points and RSA keys, and damaged
 * copies of all of them, both give the same answer. The fast path is taken for every real key.
 */
import fc from 'fast-check';
import { canonicalLayoutKeyType } from '../src/pki/spki-layout';
import { canonicalPublicKey, parsedPublicKey } from '../src/pki/public-key';
import { realKeys, spkiInputs } from '../../test-support/spki-arbitraries';

const keys = realKeys();

test('every real key is recognised by its layout, as its own key type, canonical', () => {
  for (const { keyType, spki } of keys) {
    expect(canonicalLayoutKeyType(spki)).toBe(keyType);
    expect(canonicalPublicKey(spki)).toEqual(parsedPublicKey(spki));
    expect(canonicalPublicKey(spki)).toMatchObject({ keyType, canonical: true });
  }
});

test('the fast path and the full parse agree on keys, other encodings, other keys and damaged bytes', () => {
  const seen = { fast: 0, canonical: 0, other: 0, refused: 0 };
  fc.assert(
    fc.property(spkiInputs(keys), (spki) => {
      const fast = canonicalPublicKey(spki);
      expect(fast).toEqual(parsedPublicKey(spki));
      if (canonicalLayoutKeyType(spki)) seen.fast++;
      if (fast?.canonical) seen.canonical++;
      else if (fast) seen.other++;
      else seen.refused++;
    }),
    { numRuns: 3000 },
  );
  // Every class was met: the layout, canonical keys, other encodings of keys, and no keys at all.
  expect(Math.min(seen.fast, seen.canonical, seen.other, seen.refused)).toBeGreaterThan(50);
});
