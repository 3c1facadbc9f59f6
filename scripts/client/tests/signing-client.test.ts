/**
 * The client module restates the nonce rule and the default signature algorithm so an e-service can copy
 * it alone: both must stay the service's.
 */
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import {
  ADES_PROFILES,
  KEY_TYPES,
  SIGNATURE_ALGORITHMS,
  defaultSignatureAlgorithm as serviceDefault,
  type DigestAlgorithm,
} from '@pipeline/core/shared';
import {
  SIGN_MESSAGE_MIME_TYPES,
  MAX_COMPOSED_SIGN_MESSAGE_LENGTH as CORE_MAX_COMPOSED,
  assertionNonce,
  composeSignMessage as coreComposeSignMessage,
  manifestHash as coreManifestHash,
  manifestLines as coreManifestLines,
  signMessageHash as serviceSignMessageHash,
} from '@pipeline/core/identity';
import { documentsSignatureRequest } from '../src/oidc-login';
import {
  DocumentsRequestError,
  MAX_COMPOSED_SIGN_MESSAGE_LENGTH,
  MAX_DOCUMENTS,
  composeSignMessage,
  defaultSignatureAlgorithm,
  documentsRequest,
  documentsRequestNonce,
  manifestHash,
  manifestLines,
  signMessageHash,
  signRequestNonce,
  type DocumentBinding,
} from '../src/signing-client';

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

describe('several documents under one login (nonce v3)', () => {
  const sha256 = (text: string, encoding: 'hex' | 'base64url'): string =>
    createHash('sha256').update(text, 'utf8').digest(encoding);
  const pdfDigest = Buffer.alloc(32, 1).toString('base64');
  const textDigest = Buffer.alloc(48, 2).toString('base64');
  const rawDigest = Buffer.alloc(32, 0xfb).toString('base64');
  const documents: DocumentBinding[] = [
    {
      name: 'application.pdf',
      digest: pdfDigest,
      digestAlgorithm: 'SHA-256',
      format: 'cms',
      profile: 'PAdES-B-B',
      level: 'B-LT',
    },
    { name: 'notes [draft].txt', digest: textDigest, digestAlgorithm: 'SHA-384', format: 'cms' },
    { digest: rawDigest, digestAlgorithm: 'SHA-256' },
  ];

  test('the manifest: its header, the count and five lines a document, defaults written out; its hash base64url of 43 characters', () => {
    expect(manifestLines(documents)).toEqual([
      'hsm-signing-pipeline/sign-manifest/v1',
      '3',
      ...['SHA-256', pdfDigest, 'cms', 'PAdES-B-B', sha256('application.pdf', 'hex')],
      ...['SHA-384', textDigest, 'cms', 'CAdES-B-B', sha256('notes [draft].txt', 'hex')],
      ...['SHA-256', rawDigest, 'raw', '', ''],
    ]);
    const hash = manifestHash(documents);
    expect(hash).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(hash).toBe(sha256(manifestLines(documents).join('\n'), 'base64url'));
    // Any change of order, name, profile or digest is another manifest.
    expect(manifestHash([documents[1], documents[0], documents[2]])).not.toBe(hash);
    expect(manifestHash([{ ...documents[0], name: 'application2.pdf' }, ...documents.slice(1)])).not.toBe(
      hash,
    );
    expect(manifestHash([{ ...documents[0], profile: 'CAdES-B-B' }, ...documents.slice(1)])).not.toBe(hash);
    // level and minimumLevel are not bound.
    expect(manifestHash([{ ...documents[0], level: 'B-B' }, ...documents.slice(1)])).toBe(hash);
  });

  test('the composed sign message: the text, an empty line, the count and a numbered line a document; names escaped in Markdown', () => {
    expect(composeSignMessage({ text: 'I apply for a building permit.' }, documents)).toEqual({
      text: [
        'I apply for a building permit.',
        '',
        'Documents (3):',
        '1. application.pdf',
        '2. notes [draft].txt',
        `3. unnamed (SHA-256 ${rawDigest.slice(0, 16)}...)`,
      ].join('\n'),
      mimeType: 'text/plain',
    });
    const markdown = composeSignMessage({ text: '**Apply**', mimeType: 'text/markdown' }, [
      {
        name: ' a_b*c`d\\e{f}[g](h)#i+j-k.l!m|n<o>p~q&r=s:t.pdf',
        digest: pdfDigest,
        digestAlgorithm: 'SHA-256',
      },
    ]);
    expect(markdown.text).toBe(
      '**Apply**\n\nDocuments (1):\n1. &#x20;a\\_b\\*c\\`d\\\\e\\{f\\}\\[g\\]\\(h\\)\\#i\\+j\\-k\\.l\\!m\\|n\\<o\\>p\\~q\\&r\\=s\\:t\\.pdf',
    );
    expect(markdown.mimeType).toBe('text/markdown');
  });

  test('the nonce: v3 lines over the request id in lower case, key, scheme, manifest hash and the composed message’s hash', () => {
    const requestId = '0B5C8F1E-8B8E-4C39-9F57-0D1A2F3B4C5D';
    const signMessage = { text: 'I apply for a building permit.', mimeType: 'text/plain' as const };
    const composed = composeSignMessage(signMessage, documents);
    const head = [
      'hsm-signing-pipeline/sign-request/v3',
      requestId.toLowerCase(),
      'EC-P256',
      'ECDSA',
      manifestHash(documents),
    ];
    const binding = { requestId, keyType: 'EC-P256', signatureAlgorithm: 'ECDSA', documents } as const;
    expect(documentsRequestNonce({ ...binding, signMessage })).toBe(
      sha256([...head, signMessageHash(composed)].join('\n'), 'base64url'),
    );
    expect(documentsRequestNonce(binding)).toBe(sha256(head.join('\n'), 'base64url'));
    // The hash of the composed text, not of the e-service's text alone.
    expect(documentsRequestNonce({ ...binding, signMessage })).not.toBe(
      sha256([...head, signMessageHash(signMessage)].join('\n'), 'base64url'),
    );
  });

  test('the request body: defaults written out as the manifest binds them, and what the service would refuse is refused before sending', () => {
    const binding = {
      requestId: 'a',
      keyType: 'EC-P256',
      signatureAlgorithm: 'ECDSA',
      documents,
      signMessage: { text: 'Sign' },
    } as const;
    const body = documentsRequest(binding, 'token');
    expect(body.documents).toEqual([
      {
        name: 'application.pdf',
        digest: pdfDigest,
        digestAlgorithm: 'SHA-256',
        format: 'cms',
        profile: 'PAdES-B-B',
        level: 'B-LT',
      },
      {
        name: 'notes [draft].txt',
        digest: textDigest,
        digestAlgorithm: 'SHA-384',
        format: 'cms',
        profile: 'CAdES-B-B',
        level: 'B-LT',
      },
      { digest: rawDigest, digestAlgorithm: 'SHA-256', format: 'raw' },
    ]);
    expect(body).toMatchObject({
      signMessage: { text: 'Sign', mimeType: 'text/plain' },
      identityAssertion: 'token',
    });
    expect(body).not.toHaveProperty('digest');
    // The same manifest with or without the defaults written out.
    expect(manifestHash(body.documents)).toBe(manifestHash(documents));
    expect(() => documentsRequest({ ...binding, documents: [] }, 't')).toThrow(DocumentsRequestError);
    expect(() =>
      documentsRequest(
        { ...binding, documents: Array.from({ length: MAX_DOCUMENTS + 1 }, () => documents[2]) },
        't',
      ),
    ).toThrow(DocumentsRequestError);
    expect(() =>
      documentsRequest({ ...binding, documents: [{ ...documents[0], name: 'a\nb' }] }, 't'),
    ).toThrow(DocumentsRequestError);
    expect(() =>
      documentsRequest({ ...binding, documents: [{ ...documents[0], name: 'x'.repeat(121) }] }, 't'),
    ).toThrow(DocumentsRequestError);
    // Markdown escaping doubles a name of punctuation: 50 of them do not fit, 20 do.
    const dots = Array.from({ length: MAX_DOCUMENTS }, () => ({ ...documents[0], name: '.'.repeat(120) }));
    const markdown = { ...binding, signMessage: { text: 'Sign', mimeType: 'text/markdown' as const } };
    expect(() => documentsRequest({ ...markdown, documents: dots }, 't')).toThrow(/longer than 8000/);
    expect(() => documentsRequest({ ...markdown, documents: dots.slice(0, 20) }, 't')).not.toThrow();
  });

  test('the login asks for the manifest hash with the composed message', () => {
    const key = { privateKey: new Uint8Array(32), kid: 'k', alg: 'ES256' } as const;
    const signMessage = { text: 'Sign these', mimeType: 'text/markdown' as const };
    expect(documentsSignatureRequest(key, { documents, signMessage })).toEqual({
      key,
      tbsData: manifestHash(documents),
      signMessage: composeSignMessage(signMessage, documents),
    });
  });
});

describe("the contract: the client's manifest, nonce v3 and composed message are the core's", () => {
  const documentArbitrary = fc.record(
    {
      name: fc.string({ minLength: 1, maxLength: 40, unit: 'grapheme' }).filter((n) => !/[\t\n]/.test(n)),
      bytes: fc.uint8Array({ minLength: 32, maxLength: 64 }),
      digestAlgorithm: fc.constantFrom<DigestAlgorithm>('SHA-256', 'SHA-384', 'SHA-512'),
      profile: fc.constantFrom(...ADES_PROFILES),
      cms: fc.boolean(),
    },
    { requiredKeys: ['bytes', 'digestAlgorithm', 'profile', 'cms'] },
  );

  test('for any documents, request, key and message', () => {
    fc.assert(
      fc.property(
        fc.uuid(),
        fc.constantFrom(...KEY_TYPES),
        fc.constantFrom(...SIGNATURE_ALGORITHMS),
        fc.array(documentArbitrary, { minLength: 1, maxLength: 8 }),
        fc.option(
          fc.record({
            text: fc.string({ minLength: 1, maxLength: 200 }),
            mimeType: fc.constantFrom(...SIGN_MESSAGE_MIME_TYPES),
          }),
          { nil: undefined },
        ),
        (requestId, keyType, signatureAlgorithm, entries, signMessage) => {
          // As the client sends them: cms documents with their profile, raw ones without.
          const documents: DocumentBinding[] = entries.map((e) => ({
            ...(e.name === undefined ? {} : { name: e.name }),
            digest: Buffer.from(e.bytes).toString('base64'),
            digestAlgorithm: e.digestAlgorithm,
            format: e.cms ? 'cms' : 'raw',
            ...(e.cms ? { profile: e.profile } : {}),
          }));
          const core = documents.map((d) => ({ ...d, format: d.format ?? 'raw' }));
          expect(manifestLines(documents)).toEqual(coreManifestLines(core));
          expect(manifestHash(documents)).toBe(coreManifestHash(core));
          const composed = signMessage ? composeSignMessage(signMessage, documents) : undefined;
          if (signMessage) expect(composed).toEqual(coreComposeSignMessage(signMessage, documents));
          expect(
            documentsRequestNonce({
              requestId: requestId.toUpperCase(),
              keyType,
              signatureAlgorithm,
              documents,
              ...(signMessage ? { signMessage } : {}),
            }),
          ).toBe(
            assertionNonce({
              requestId,
              keyType,
              signatureAlgorithm,
              documents: core,
              ...(composed ? { signMessageHash: serviceSignMessageHash(composed) } : {}),
            }),
          );
        },
      ),
    );
  });

  test('the composed message’s limit is the core’s', () => {
    expect(MAX_COMPOSED_SIGN_MESSAGE_LENGTH).toBe(CORE_MAX_COMPOSED);
  });
});
