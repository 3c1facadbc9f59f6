/**
 * Several documents under one login: the documents' rules and defaults, the manifest and the v3 nonce,
 * the composed sign message and the approval's tbs_data. The vectors are fixed (computed independently,
 * and listed in docs/api.md for the client side to check against).
 */
import { createHash } from 'node:crypto';
import openapi from '../../api/openapi.json';
import {
  assertionNonce,
  bindingOf,
  composeSignMessage,
  DOCUMENT_NAME_PATTERN,
  expectedApproval,
  manifestBindingLines,
  manifestHash,
  manifestLines,
  MAX_COMPOSED_SIGN_MESSAGE_LENGTH,
  requestBindingOf,
  signMessageHash,
  type ManifestBinding,
  type ManifestDocument,
} from '../src/identity';
import { signatureMadeEvent, validateAuditEvent } from '../src/audit';
import { validateDocuments } from '../src/signing';

const D1 = Buffer.alloc(32, 1).toString('base64');
const D2 = Buffer.alloc(48, 2).toString('base64');
const D3 = Buffer.alloc(32, 3).toString('base64');

const DOCUMENTS: ManifestDocument[] = [
  { digestAlgorithm: 'SHA-256', digest: D1, format: 'cms', profile: 'PAdES-B-B', name: 'application.pdf' },
  { digestAlgorithm: 'SHA-384', digest: D2, format: 'cms', profile: 'CAdES-B-B', name: 'anteckningar ö.txt' },
  { digestAlgorithm: 'SHA-256', digest: D3, format: 'raw' },
];
const REQUEST_ID = '0B5C8F1E-8B8E-4C39-9F57-0D1A2F3B4C5D';
const MESSAGE = { text: 'I apply for a building permit.', mimeType: 'text/plain' as const };

const binding = (overrides: Partial<ManifestBinding> = {}): ManifestBinding => ({
  requestId: REQUEST_ID,
  keyType: 'EC-P256',
  signatureAlgorithm: 'ECDSA',
  documents: DOCUMENTS,
  ...overrides,
});

describe('the manifest', () => {
  test('its lines: context, count, then five lines per document (profile and nameHash empty when absent)', () => {
    const nameHash = (name: string): string => createHash('sha256').update(name, 'utf8').digest('hex');
    expect(manifestLines(DOCUMENTS)).toEqual([
      'hsm-signing-pipeline/sign-manifest/v1',
      '3',
      'SHA-256',
      D1,
      'cms',
      'PAdES-B-B',
      nameHash('application.pdf'),
      'SHA-384',
      D2,
      'cms',
      'CAdES-B-B',
      nameHash('anteckningar ö.txt'),
      'SHA-256',
      D3,
      'raw',
      '',
      '',
    ]);
    // UTF-8 (ö is c3 b6), not UTF-16 or Latin-1.
    expect(nameHash('anteckningar ö.txt')).toBe(
      createHash('sha256').update(Buffer.from('616e7465636b6e696e67617220c3b62e747874', 'hex')).digest('hex'),
    );
  });

  test('the fixed vectors', () => {
    expect(manifestHash(DOCUMENTS)).toBe('BJ30Z0i1IHmLtEle3-ppby76q0hvh5dh4BtQuX-d88E');
    expect(manifestHash([{ digestAlgorithm: 'SHA-256', digest: D3, format: 'raw' }])).toBe(
      'WBZH-qgMqDrfKehSEB5u0WHtRGOYnoSZs3DeaRSSp5Q',
    );
    expect(assertionNonce(binding())).toBe('1QjiTJW1_ZKnuamRzExnJzBE_JMkPxg_5eXfpL8bMQM');
    const composed = composeSignMessage(MESSAGE, DOCUMENTS);
    expect(composed.text).toBe(
      'I apply for a building permit.\n\nDocuments (3):\n1. application.pdf\n2. anteckningar ö.txt\n3. unnamed (SHA-256 AwMDAwMDAwMDAwMD...)',
    );
    const hash = signMessageHash(composed);
    expect(hash).toBe('f3522a65cc44ca1f3d961f67f1d6995f6f26e3e72ff65f256664ae301f1798f5');
    expect(assertionNonce(binding({ signMessageHash: hash }))).toBe(
      'ZMA9vUEMVnP1AvCDXwnpzjUUNZw-seaynSFEzVkRU6s',
    );
    expect(manifestBindingLines(binding({ signMessageHash: hash }))).toEqual([
      'hsm-signing-pipeline/sign-request/v3',
      REQUEST_ID.toLowerCase(),
      'EC-P256',
      'ECDSA',
      'BJ30Z0i1IHmLtEle3-ppby76q0hvh5dh4BtQuX-d88E',
      hash,
    ]);
  });

  test('a document added, removed, reordered or changed changes the nonce', () => {
    const nonce = assertionNonce(binding());
    const variants: ManifestDocument[][] = [
      [...DOCUMENTS, { digestAlgorithm: 'SHA-256', digest: D1, format: 'raw' }],
      DOCUMENTS.slice(0, 2),
      [DOCUMENTS[1], DOCUMENTS[0], DOCUMENTS[2]],
      [{ ...DOCUMENTS[0], digest: D3 }, DOCUMENTS[1], DOCUMENTS[2]],
      [{ ...DOCUMENTS[0], profile: 'CAdES-B-B' }, DOCUMENTS[1], DOCUMENTS[2]],
      [{ ...DOCUMENTS[0], name: 'other.pdf' }, DOCUMENTS[1], DOCUMENTS[2]],
      [DOCUMENTS[0], DOCUMENTS[1], { ...DOCUMENTS[2], name: 'named.bin' }],
    ];
    const nonces = variants.map((documents) => assertionNonce(binding({ documents })));
    expect(new Set([nonce, ...nonces]).size).toBe(variants.length + 1);
  });

  test('one document is v3, never the v2 nonce of the same document', () => {
    const one = DOCUMENTS[2];
    const v2 = bindingOf({
      id: REQUEST_ID,
      keyType: 'EC-P256',
      signatureAlgorithm: 'ECDSA',
      ...one,
      format: one.format === 'cms' ? 'cms' : 'raw',
    });
    expect(assertionNonce(binding({ documents: [one] }))).not.toBe(assertionNonce(v2));
  });

  test('requestBindingOf: the manifest binding for a record with documents, v2 otherwise', () => {
    const record = {
      id: REQUEST_ID,
      keyType: 'EC-P256' as const,
      signatureAlgorithm: 'ECDSA' as const,
      digest: D1,
      digestAlgorithm: 'SHA-256' as const,
    };
    expect(requestBindingOf({ ...record, documents: DOCUMENTS })).toEqual(binding());
    expect(requestBindingOf(record)).toEqual(bindingOf(record));
  });

  test("the approval's tbs_data is the manifestHash", () => {
    expect(expectedApproval(binding())).toBeUndefined();
    expect(expectedApproval(binding({ signMessageHash: 'a'.repeat(64) }))).toEqual({
      tbsData: 'BJ30Z0i1IHmLtEle3-ppby76q0hvh5dh4BtQuX-d88E',
      signMessageHash: 'a'.repeat(64),
    });
  });
});

describe('the composed sign message', () => {
  test('markdown names have their punctuation escaped; the text and unnamed labels are kept', () => {
    const composed = composeSignMessage({ text: '**Ansökan**', mimeType: 'text/markdown' }, [
      { digestAlgorithm: 'SHA-256', digest: D1, name: 'report_[v1.2] (final)!.pdf' },
    ]);
    expect(composed.text).toBe(
      '**Ansökan**\n\nDocuments (1):\n1. report\\_\\[v1\\.2\\] \\(final\\)\\!\\.pdf',
    );
    expect(signMessageHash(composed)).toBe(
      '6e347c172c671b8b1a8840ee769209ab80f588bf27bf6885848e8db7e039f750',
    );
    // Every ASCII punctuation character, as CommonMark lets each be escaped (& an entity, = an underline).
    const punctuation = '!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~';
    const all = composeSignMessage({ text: 'x', mimeType: 'text/markdown' }, [
      { digestAlgorithm: 'SHA-256', digest: D1, name: `a${punctuation}` },
    ]);
    expect(all.text.endsWith(`1. a${[...punctuation].map((c) => `\\${c}`).join('')}`)).toBe(true);
    // White space at either end as character references: a parser would strip it (or indent code).
    const spaced = composeSignMessage({ text: 'x', mimeType: 'text/markdown' }, [
      { digestAlgorithm: 'SHA-256', digest: D1, name: '     a b\u00a0' },
    ]);
    expect(spaced.text.endsWith('1. &#x20;&#x20;&#x20;&#x20;&#x20;a b&#xA0;')).toBe(true);
    // Plain text is not escaped.
    expect(
      composeSignMessage(MESSAGE, [{ digestAlgorithm: 'SHA-256', digest: D1, name: 'a_b.pdf' }]).text,
    ).toMatch(/1\. a_b\.pdf$/);
  });

  test('at most 8000 characters: SIGN_MESSAGE_INVALID beyond (markdown escapes can double a name)', () => {
    const long = { text: 'x'.repeat(1000), mimeType: 'text/markdown' as const };
    const named = (n: number) =>
      Array.from({ length: n }, (_, i) => ({
        digestAlgorithm: 'SHA-256',
        digest: D1,
        name: `${String(i).padStart(2, '0')}${'.'.repeat(118)}`,
      }));
    // 1000 + 16 + 50 lines of up to 4 + 240 characters: beyond 8000.
    expect(() => composeSignMessage(long, named(50))).toThrow(
      expect.objectContaining({ code: 'SIGN_MESSAGE_INVALID' }),
    );
    const fits = composeSignMessage(long, named(25));
    expect([...fits.text].length).toBeLessThanOrEqual(MAX_COMPOSED_SIGN_MESSAGE_LENGTH);
    // Plain text never reaches the limit: 50 names of 120 characters and a text of 1000 fit.
    expect(() => composeSignMessage({ ...long, mimeType: 'text/plain' }, named(50))).not.toThrow();
  });
});

describe('the documents', () => {
  const doc = { digest: D1, digestAlgorithm: 'SHA-256' };

  test('defaults: raw; cms with CAdES-B-B at B-LT, the minimum the level', () => {
    expect(
      validateDocuments([doc, { ...doc, format: 'cms' }, { ...doc, format: 'cms', level: 'B-T' }]),
    ).toEqual([
      { digest: D1, digestAlgorithm: 'SHA-256', format: 'raw' },
      { ...doc, format: 'cms', profile: 'CAdES-B-B', level: 'B-LT', minimumLevel: 'B-LT' },
      { ...doc, format: 'cms', profile: 'CAdES-B-B', level: 'B-T', minimumLevel: 'B-T' },
    ]);
  });

  test.each([
    ['none', []],
    ['51', Array.from({ length: 51 }, () => doc)],
    ['not an array', doc],
    ['a short digest', [{ ...doc, digest: Buffer.alloc(31).toString('base64') }]],
    ['a digest in base64url', [{ ...doc, digest: Buffer.alloc(32, 0xfb).toString('base64url') }]],
    ['a profile with raw', [{ ...doc, profile: 'CAdES-B-B' }]],
    ['a level with raw', [{ ...doc, level: 'B-T' }]],
    ['a minimum above the level', [{ ...doc, format: 'cms', level: 'B-T', minimumLevel: 'B-LT' }]],
    ['an unknown field', [{ ...doc, signer: 'x' }]],
    ['an empty name', [{ ...doc, name: '' }]],
    ['a name of 121 characters', [{ ...doc, name: 'é'.repeat(121) }]],
    ['a name with a line feed', [{ ...doc, name: 'a\nb' }]],
    ['a name with a tab', [{ ...doc, name: 'a\tb' }]],
    ['a blank name', [{ ...doc, name: '   ' }]],
    ['a name with a direction override', [{ ...doc, name: 'cod\u202Efdp.exe' }]],
    ['a name with a zero-width space', [{ ...doc, name: 'a\u200Bb' }]],
  ])('refused: %s (VALIDATION_FAILED, the index named)', (_, documents) => {
    let error: unknown;
    try {
      validateDocuments(documents);
    } catch (err) {
      error = err;
    }
    expect(error).toMatchObject({ code: 'VALIDATION_FAILED' });
    expect((error as Error).message).toMatch(/^documents/);
  });

  test('a name of 120 characters beyond the BMP is accepted', () => {
    expect(validateDocuments([{ ...doc, name: '😀'.repeat(120) }])[0].name).toBe('😀'.repeat(120));
  });

  test("openapi.json's name pattern is the core's, and agrees with it", () => {
    const name = openapi.components.schemas.SignDocument.properties.name;
    expect(name.pattern).toBe(DOCUMENT_NAME_PATTERN);
    const pattern = new RegExp(DOCUMENT_NAME_PATTERN, 'u');
    for (const ok of ['application.pdf', ' a', 'Åsa Öberg – ansökan.pdf', '😀'])
      expect(pattern.test(ok)).toBe(true);
    for (const bad of ['', ' ', 'a\nb', 'a\tb', 'a\u202Eb', 'a\u200Bb'])
      expect(pattern.test(bad)).toBe(false);
  });
});

describe("a document's signature event", () => {
  const made = (documentIndex?: number) =>
    signatureMadeEvent({
      requestId: 'r-1',
      signature: Buffer.from('signature value'),
      publicKeySpki: Buffer.from('spki'),
      ...(documentIndex === undefined ? {} : { documentIndex }),
    });

  test('names the document by index and the signature by its SHA-256; without an index it is as before', () => {
    expect(validateAuditEvent(made(3))).toEqual({
      type: 'signature.made',
      requestId: 'r-1',
      signatureHash: createHash('sha256').update('signature value').digest('hex'),
      keySpkiHash: createHash('sha256').update('spki').digest('hex'),
      documentIndex: 3,
    });
    expect(Object.keys(validateAuditEvent(made()))).not.toContain('documentIndex');
  });

  test.each([-1, 50, 1.5])('refuses the index %p', (index) => {
    expect(() => validateAuditEvent({ ...made(), documentIndex: index })).toThrow(/documentIndex/);
  });
});
