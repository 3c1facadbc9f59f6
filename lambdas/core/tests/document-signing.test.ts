/**
 * One path for one or several documents: a single-document request is a list of one inside the attempt
 * (its defaults, its signature's audit event without an index, its result in the record's own fields),
 * a request with `documents` keeps its indexes and gets documentResults.
 */
import type { IssuedCertificate } from '../src/pki';
import type { SignDocument } from '../src/signing';
import type { ContainerExtras, PreparedContainer } from '../src/signing/signature-container';
import { containersUnsupported, documentPlanOf, signDocuments } from '../src/signing/document-signing';
import { signedResultOf } from '../src/signing/signed-result';
import { attemptContext, harness, received, type Harness } from './fakes';

const issued: IssuedCertificate = { certificatePem: 'leaf', chainPem: ['issuing', 'root'], serialHex: '0a' };
const digest = Buffer.alloc(32, 7).toString('base64');

describe('documentPlanOf', () => {
  test('a single raw request: a list of one with its digest, no levels', () => {
    const h = harness();
    const record = received(h, { digest, format: 'raw' });
    expect(documentPlanOf(record)).toEqual({
      single: true,
      documents: [{ digest, digestAlgorithm: 'SHA-256', format: 'raw' }],
    });
  });

  test('a single cms request without a level (older records): B-B, its profile as stored', () => {
    const h = harness();
    const record = received(h, { digest, format: 'cms', profile: 'PAdES-B-B' });
    expect(documentPlanOf(record).documents).toEqual([
      {
        digest,
        digestAlgorithm: 'SHA-256',
        format: 'cms',
        profile: 'PAdES-B-B',
        level: 'B-B',
        minimumLevel: 'B-B',
      },
    ]);
  });

  test('a single cms request without a profile cannot be built; documents default to CAdES-B-B', () => {
    const h = harness();
    expect(containersUnsupported(attemptContext(h, received(h, { format: 'cms' })))).toBe(true);
    const documents: SignDocument[] = [{ digest, digestAlgorithm: 'SHA-256', format: 'cms', level: 'B-T' }];
    const ctx = attemptContext(h, received(h, { documents }));
    expect(ctx.plan).toEqual({
      single: false,
      documents: [{ ...documents[0], profile: 'CAdES-B-B', minimumLevel: 'B-T' }],
    });
    expect(containersUnsupported(ctx)).toBe(false);
    h.deps.buildContainer = undefined;
    expect(containersUnsupported(ctx)).toBe(true);
  });
});

/** A live one-time key in the fake HSM, held by the context. */
async function withKey(h: Harness, ctx: ReturnType<typeof attemptContext>): Promise<void> {
  const pair = await h.hsm.generateKeyPair('EC-P256');
  ctx.key.hold(pair.privateKey);
}

describe('signDocuments', () => {
  test('a single document: one signature over the digest, its audit event without a document index', async () => {
    const h = harness();
    const ctx = attemptContext(h, received(h, { digest, format: 'raw' }));
    await withKey(h, ctx);
    const { made } = await signDocuments(ctx, {
      publicKeySpki: Buffer.from('spki'),
      csrDer: Buffer.alloc(0),
      issued,
    });
    expect(made).toHaveLength(1);
    expect(made[0].signature.subarray(-32)).toEqual(Buffer.from(digest, 'base64'));
    await ctx.audit.append();
    expect(h.appended).toEqual([expect.not.objectContaining({ documentIndex: expect.anything() })]);
    expect(h.appended[0].type).toBe('signature.made');
  });

  test('documents: each signed in input order (cms: its attributes), each audit event with its index', async () => {
    const h = harness();
    const documents: SignDocument[] = [
      { digest, digestAlgorithm: 'SHA-256', format: 'cms', profile: 'CAdES-B-B', level: 'B-B' },
      { digest, digestAlgorithm: 'SHA-256', format: 'raw' },
    ];
    const ctx = attemptContext(h, received(h, { documents }));
    await withKey(h, ctx);
    const { made } = await signDocuments(ctx, {
      publicKeySpki: Buffer.from('spki'),
      csrDer: Buffer.alloc(0),
      issued,
    });
    expect(made.map((m) => m.prepared !== undefined)).toEqual([true, false]);
    await ctx.audit.append();
    expect(h.appended.map((e) => (e as { documentIndex?: number }).documentIndex)).toEqual([0, 1]);
  });
});

describe('signedResultOf', () => {
  /** A container that records what it was finished with. */
  function prepared(extras: ContainerExtras[]): PreparedContainer {
    return {
      toBeSigned: Buffer.from('attrs'),
      finish: (_signature, e) => {
        extras.push(e ?? {});
        return Buffer.from('cms');
      },
    };
  }
  const data = { certificates: [Buffer.from('c')], ocspResponses: [Buffer.from('o')], crls: [] };

  test('a single cms document: the record fields (no index), validation data inside a CAdES container', async () => {
    const h = harness();
    const extras: ContainerExtras[] = [];
    const ctx = attemptContext(h, received(h, { format: 'cms', profile: 'CAdES-B-B', level: 'B-LT' }));
    const token = Buffer.from('token');
    const result = await signedResultOf(
      ctx,
      issued,
      [{ signature: Buffer.from('s'), prepared: prepared(extras) }],
      [{ level: 'B-LT', timeStampToken: token, validationData: data }],
    );
    expect(result).toEqual({
      cms: Buffer.from('cms').toString('base64'),
      reachedLevel: 'B-LT',
      validationData: { certificates: ['Yw=='], ocspResponses: ['bw=='], crls: [] },
      certificate: 'leaf',
      certificateSerial: '0a',
      chain: ['issuing', 'root'],
    });
    expect(extras).toEqual([{ timeStampToken: token, validationData: data }]);
  });

  test('documents: documentResults by index and their expiry; a PDF container gets no validation data', async () => {
    const h = harness();
    const extras: ContainerExtras[] = [];
    const documents: SignDocument[] = [
      { digest, digestAlgorithm: 'SHA-256', format: 'raw' },
      { digest, digestAlgorithm: 'SHA-256', format: 'cms', profile: 'PAdES-B-B', level: 'B-LT' },
    ];
    const record = received(h, { documents });
    const made = [
      { signature: Buffer.from('r') },
      { signature: Buffer.from('p'), prepared: prepared(extras) },
    ];
    const result = await signedResultOf(attemptContext(h, record), issued, made, [
      { level: 'B-B' },
      { level: 'B-LT', timeStampToken: Buffer.from('t'), validationData: data },
    ]);
    expect(result.documentResults).toEqual([
      { index: 0, signature: Buffer.from('r').toString('base64') },
      {
        index: 1,
        cms: Buffer.from('cms').toString('base64'),
        reachedLevel: 'B-LT',
        validationData: { certificates: ['Yw=='], ocspResponses: ['bw=='], crls: [] },
      },
    ]);
    expect(result).toMatchObject({ certificate: 'leaf', resultsExpireAt: record.expiresAt });
    expect(result.signature).toBeUndefined();
    expect(extras).toEqual([{ timeStampToken: Buffer.from('t'), validationData: undefined }]);
  });

  test('a container that fails to finish fails the container stage', async () => {
    const h = harness();
    const ctx = attemptContext(h, received(h, { format: 'cms', profile: 'CAdES-B-B' }));
    const broken = {
      toBeSigned: Buffer.alloc(0),
      finish: () => {
        throw new Error('bad');
      },
    };
    await expect(
      signedResultOf(ctx, issued, [{ signature: Buffer.from('s'), prepared: broken }], [{ level: 'B-B' }]),
    ).rejects.toMatchObject({ name: 'StageError', stage: 'container' });
  });
});
