/**
 * Signature levels over fakes of the TSA and the validation data source: each container's time-stamp,
 * the validation data collected once after the last time-stamp, and a level lowered within the request's
 * minimum (the caller told) or the request ended with the TSA's or the responder's code.
 */
import type { IssuedCertificate } from '../src/pki';
import type { SignatureLevel } from '../src/shared/formats';
import type { SignDocument, StoredSignRequest, ValidationData } from '../src/signing';
import type { MadeSignature } from '../src/signing/document-signing';
import { reachLevels } from '../src/signing/signature-levels';
import { attemptContext, harness, received, type Harness } from './fakes';

const issued: IssuedCertificate = {
  certificatePem: 'leaf',
  chainPem: ['issuing', 'root'],
  serialHex: '0a',
  ocspResponse: 'b2NzcA==',
};
const data: ValidationData = { certificates: [Buffer.from('c')], ocspResponses: [], crls: [] };

interface Calls {
  readonly stamped: string[];
  readonly collected: Buffer[];
  readonly lowered: Array<[SignatureLevel, string]>;
}

/** A harness whose TSA stamps `token(<signature>)` unless `tsaDown`, and whose source returns `data`. */
function levelsHarness(options: { tsaDown?: boolean; sourceDown?: boolean } = {}): Harness & Calls {
  const calls: Calls = { stamped: [], collected: [], lowered: [] };
  const h = harness({
    timeStamper: {
      timeStamp: async (signature) => {
        if (options.tsaDown) throw new Error('tsa down');
        calls.stamped.push(signature.toString());
        return Buffer.from(`token(${signature.toString()})`);
      },
    },
    validationData: {
      collect: async (input) => {
        if (options.sourceDown) throw new Error('responder down');
        expect(input).toMatchObject({ certificatePem: 'leaf', ocspResponse: 'b2NzcA==' });
        calls.collected.push(input.timeStampToken);
        return data;
      },
    },
    onLevelLowered: (reached, code) => calls.lowered.push([reached, code]),
  });
  return Object.assign(h, calls);
}

const made = (n: number): MadeSignature[] =>
  Array.from({ length: n }, (_, i) => ({ signature: Buffer.from(`sig${i}`) }));

const cms = (level: SignatureLevel, minimumLevel: SignatureLevel = level): SignDocument => ({
  digest: Buffer.alloc(32).toString('base64'),
  digestAlgorithm: 'SHA-256',
  format: 'cms',
  profile: 'CAdES-B-B',
  level,
  minimumLevel,
});

function single(h: Harness, level: SignatureLevel, minimumLevel?: SignatureLevel): StoredSignRequest {
  return received(h, { format: 'cms', profile: 'CAdES-B-B', level, minimumLevel });
}

describe('a single container', () => {
  test('B-LT: its signature time-stamped, then the validation data collected with that token', async () => {
    const h = levelsHarness();
    const levels = await reachLevels(attemptContext(h, single(h, 'B-LT')), made(1), issued);
    expect(levels).toEqual([
      { level: 'B-LT', timeStampToken: Buffer.from('token(sig0)'), validationData: data },
    ]);
    expect(h.collected).toEqual([Buffer.from('token(sig0)')]);
  });

  test('B-T: time-stamped, no validation data asked for', async () => {
    const h = levelsHarness();
    const levels = await reachLevels(attemptContext(h, single(h, 'B-T')), made(1), issued);
    expect(levels).toEqual([{ level: 'B-T', timeStampToken: Buffer.from('token(sig0)') }]);
    expect(h.collected).toEqual([]);
  });

  test('a record without a level is B-B: no TSA', async () => {
    const h = levelsHarness();
    const record = received(h, { format: 'cms', profile: 'CAdES-B-B' });
    expect(await reachLevels(attemptContext(h, record), made(1), issued)).toEqual([{ level: 'B-B' }]);
    expect(h.stamped).toEqual([]);
  });

  test('TSA down within the minimum: B-B, and the caller told', async () => {
    const h = levelsHarness({ tsaDown: true });
    const levels = await reachLevels(attemptContext(h, single(h, 'B-LT', 'B-B')), made(1), issued);
    expect(levels).toEqual([{ level: 'B-B' }]);
    expect(h.lowered).toEqual([['B-B', 'TSA_UNAVAILABLE']]);
  });

  test('TSA down below the minimum: the request ends TSA_UNAVAILABLE, naming no document', async () => {
    const h = levelsHarness({ tsaDown: true });
    const levels = await reachLevels(attemptContext(h, single(h, 'B-T')), made(1), issued);
    expect(levels).toEqual({
      ended: 'failed',
      error: { code: 'TSA_UNAVAILABLE', message: 'the time-stamping authority did not answer' },
    });
    expect(h.lowered).toEqual([]);
  });

  test('no TSA configured: like a TSA that does not answer', async () => {
    const h = levelsHarness();
    h.deps.timeStamper = undefined;
    const levels = await reachLevels(attemptContext(h, single(h, 'B-LT', 'B-B')), made(1), issued);
    expect(levels).toEqual([{ level: 'B-B' }]);
  });

  test('responder down within the minimum: B-T with its token', async () => {
    const h = levelsHarness({ sourceDown: true });
    const levels = await reachLevels(attemptContext(h, single(h, 'B-LT', 'B-T')), made(1), issued);
    expect(levels).toEqual([{ level: 'B-T', timeStampToken: Buffer.from('token(sig0)') }]);
    expect(h.lowered).toEqual([['B-T', 'VALIDATION_DATA_UNAVAILABLE']]);
  });
});

describe('several documents', () => {
  const raw: SignDocument = {
    digest: Buffer.alloc(32).toString('base64'),
    digestAlgorithm: 'SHA-256',
    format: 'raw',
  };

  test('each container stamped, raw ones not; the validation data collected once, with the last token', async () => {
    const h = levelsHarness();
    const record = received(h, { documents: [cms('B-LT'), raw, cms('B-T'), cms('B-LT')] });
    const levels = await reachLevels(attemptContext(h, record), made(4), issued);
    expect(h.stamped).toEqual(['sig0', 'sig2', 'sig3']);
    expect(h.collected).toEqual([Buffer.from('token(sig3)')]);
    expect(levels).toEqual([
      { level: 'B-LT', timeStampToken: Buffer.from('token(sig0)'), validationData: data },
      { level: 'B-B' },
      { level: 'B-T', timeStampToken: Buffer.from('token(sig2)') },
      { level: 'B-LT', timeStampToken: Buffer.from('token(sig3)'), validationData: data },
    ]);
  });

  test('responder down: a document that accepts B-T is lowered, the next that does not ends the request, by index', async () => {
    const h = levelsHarness({ sourceDown: true });
    const record = received(h, { documents: [cms('B-LT', 'B-T'), cms('B-LT')] });
    const levels = await reachLevels(attemptContext(h, record), made(2), issued);
    expect(levels).toEqual({
      ended: 'failed',
      error: {
        code: 'VALIDATION_DATA_UNAVAILABLE',
        message: 'the validation data (OCSP, CRL) could not be collected (document 1)',
      },
    });
    expect(h.lowered).toEqual([['B-T', 'VALIDATION_DATA_UNAVAILABLE']]);
  });
});
