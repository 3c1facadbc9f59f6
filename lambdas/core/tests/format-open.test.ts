/**
 * A login that approved the digests in any format (`formatOpen`, the CSC door's hashes-only authorization):
 * the nonce binds request, digests, key, algorithm and message, not the format, so the format named at
 * signing matches it; and an open binding never matches a bound one, either way.
 */
import {
  assertionNonce,
  bindingLines,
  FORMAT_OPEN,
  requestBindingOf,
  type ManifestDocument,
} from '@pipeline/core/identity';

const request = {
  id: '0b5c8f1e-8b8e-4c39-9f57-0d1a2f3b4c5d',
  digestAlgorithm: 'SHA-256',
  digest: Buffer.alloc(32, 7).toString('base64'),
  keyType: 'EC-P256',
  signatureAlgorithm: 'ECDSA',
} as const;

const documents: ManifestDocument[] = [
  {
    digestAlgorithm: 'SHA-256',
    digest: Buffer.alloc(32, 1).toString('base64'),
    format: 'raw',
    name: 'a.pdf',
  },
  { digestAlgorithm: 'SHA-256', digest: Buffer.alloc(32, 2).toString('base64'), format: 'raw' },
];

const nonce = (fields: Parameters<typeof requestBindingOf>[0]): string =>
  assertionNonce(requestBindingOf(fields));

test('one document: the format and profile lines are open, whatever the record signs', () => {
  const open = requestBindingOf({ ...request, formatOpen: true });
  expect(bindingLines(open as Parameters<typeof bindingLines>[0]).slice(6, 8)).toEqual([FORMAT_OPEN, '']);
  const raw = nonce({ ...request, formatOpen: true });
  expect(nonce({ ...request, formatOpen: true, format: 'cms', profile: 'PAdES-B-B' })).toBe(raw);
  // Bound: the format is part of the nonce, and an open login matches no bound record (nor the reverse).
  expect(nonce({ ...request, format: 'cms', profile: 'PAdES-B-B' })).not.toBe(nonce(request));
  expect(nonce(request)).not.toBe(raw);
  // The digest, the request and the key stay bound.
  expect(nonce({ ...request, formatOpen: true, digest: Buffer.alloc(32, 8).toString('base64') })).not.toBe(
    raw,
  );
  expect(
    nonce({ ...request, formatOpen: true, keyType: 'RSA-2048', signatureAlgorithm: 'RSASSA-PSS' }),
  ).not.toBe(raw);
});

test('several documents: each format open, the documents, order and names still bound', () => {
  const open = nonce({ ...request, documents, formatOpen: true });
  const asCms = documents.map((d) => ({ ...d, format: 'cms' as const, profile: 'CAdES-B-B' as const }));
  expect(nonce({ ...request, documents: asCms, formatOpen: true })).toBe(open);
  expect(nonce({ ...request, documents })).not.toBe(open);
  expect(nonce({ ...request, documents: [...documents].reverse(), formatOpen: true })).not.toBe(open);
  expect(
    nonce({ ...request, documents: [{ ...documents[0], name: 'b.pdf' }, documents[1]], formatOpen: true }),
  ).not.toBe(open);
});
