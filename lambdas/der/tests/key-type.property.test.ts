/**
 * keyTypeOfSpki's canonical-layout fast path against node:crypto's parse (parsedKeyType): for real keys
 * of every key type, the other encodings of those keys, other points and RSA keys, and damaged copies of
 * all of them, both name the same key type or none.
 */
import fc from 'fast-check';
import { keyTypeOfSpki, parsedKeyType } from '../src/algorithms';
import { realKeys, spkiInputs } from '../../test-support/spki-arbitraries';

const keys = realKeys();

test('every real key: its key type, by both paths', () => {
  for (const { keyType, spki } of keys) {
    expect(keyTypeOfSpki(spki)).toBe(keyType);
    expect(parsedKeyType(spki)).toBe(keyType);
  }
});

test('the fast path and the parse agree on keys, other encodings, other keys and damaged bytes', () => {
  let named = 0;
  let none = 0;
  fc.assert(
    fc.property(spkiInputs(keys), (spki) => {
      const keyType = keyTypeOfSpki(spki);
      expect(keyType).toBe(parsedKeyType(spki));
      if (keyType) named++;
      else none++;
    }),
    { numRuns: 3000 },
  );
  expect(Math.min(named, none)).toBeGreaterThan(100);
});
