/**
 * The CA's fast CSR reader against the full schema parse: for random CSRs (every key type and every
 * signature scheme, canonical and other key encodings, random subjects of every string type, single and
 * multi-valued RDNs, attribute sets) verifyCsr gives exactly what verifyCsrByParse gives; and for mutated
 * CSRs (octets flipped, cut, inserted; in the whole CSR, or in the CertificationRequestInfo re-signed so
 * the signature still holds) both refuse with the same error or accept with equal results.
 */
import { ECDH, createHash, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import fc from 'fast-check';
import { SCHEMES, algorithmIdentifier, algorithmIdentifierDer } from '../src/algorithms';
import { verifyCsr, verifyCsrByParse } from '../src/csr';
import { readCsrFast } from '../src/csr-reader';
import { derElement } from '../src/der';

const el = (tag: number, ...parts: Buffer[]): Buffer => derElement(tag, Buffer.concat(parts));

interface Key {
  readonly family: 'EC' | 'RSA';
  readonly privateKey: KeyObject;
  /** The SPKI as OpenSSL writes it, and other encodings of the same key. */
  readonly spkis: readonly Buffer[];
}

function ecKey(namedCurve: 'P-256' | 'P-384'): Key {
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve });
  const spki = publicKey.export({ type: 'spki', format: 'der' });
  const size = namedCurve === 'P-256' ? 65 : 97;
  const point = spki.subarray(spki.length - size);
  const curve = namedCurve === 'P-256' ? 'prime256v1' : 'secp384r1';
  const compressed = ECDH.convertKey(point, curve, undefined, undefined, 'compressed') as Buffer;
  const algorithm = spki.subarray(2, spki.length - size - 3);
  return {
    family: 'EC',
    privateKey,
    spkis: [spki, el(0x30, algorithm, el(0x03, Buffer.from([0]), compressed))],
  };
}

function rsaKey(modulusLength: number): Key {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength });
  const spki = publicKey.export({ type: 'spki', format: 'der' });
  // The same key, its AlgorithmIdentifier without the NULL parameters.
  const rsaPublicKey = publicKey.export({ type: 'pkcs1', format: 'der' });
  const noNull = el(
    0x30,
    el(0x30, Buffer.from('06092a864886f70d010101', 'hex')),
    el(0x03, Buffer.from([0]), rsaPublicKey),
  );
  return { family: 'RSA', privateKey, spkis: [spki, noNull] };
}

const KEYS: readonly Key[] = [
  ecKey('P-256'),
  ecKey('P-256'),
  ecKey('P-384'),
  ecKey('P-384'),
  rsaKey(2048),
  rsaKey(3072),
  rsaKey(4096),
];

/** An OID's DER from its arcs. */
function oidDer(arcs: readonly number[]): Buffer {
  const values = [arcs[0] * 40 + arcs[1], ...arcs.slice(2)];
  const octets = values.flatMap((v) => {
    const out = [v & 0x7f];
    for (let n = Math.floor(v / 128); n > 0; n = Math.floor(n / 128)) out.unshift(0x80 | (n & 0x7f));
    return out;
  });
  return el(0x06, Buffer.from(octets));
}

const KNOWN_OIDS = [
  [2, 5, 4, 6],
  [2, 5, 4, 3],
  [2, 5, 4, 5],
  [2, 5, 4, 42],
  [2, 5, 4, 4],
  [1, 2, 840, 113549, 1, 9, 1],
].map(oidDer);
const oid = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...KNOWN_OIDS) },
  fc
    .tuple(
      fc.integer({ min: 0, max: 2 }),
      fc.integer({ min: 0, max: 39 }),
      fc.array(fc.nat(), { maxLength: 5 }),
    )
    .map(([a, b, rest]) => oidDer([a, b, ...rest])),
  // raw content: maybe not an OID the parser reads back the same
  fc.uint8Array({ minLength: 0, maxLength: 6 }).map((bytes) => el(0x06, Buffer.from(bytes))),
  // not minimal: an arc with a leading 0x80 octet (2.5.4.3, 2.5.4.42); an arc of 5 octets (2.5.4.2^28)
  fc
    .constantFrom('060455048003', '06045580042a', '0607550481808080 00')
    .map((hex) => Buffer.from(hex.replace(/ /g, ''), 'hex')),
);

/** An element with a long-form length where the short form was due (not DER; BER reads it). */
const longForm = (tag: number, content: Buffer): Buffer =>
  Buffer.concat([Buffer.from([tag, 0x81, content.length]), content]);

const utf8 = fc.string({ unit: 'grapheme', minLength: 0, maxLength: 90 }).map((s) => Buffer.from(s, 'utf8'));
const raw = fc.uint8Array({ minLength: 0, maxLength: 40 }).map((b) => Buffer.from(b));
const attributeValue = fc.oneof(
  { weight: 6, arbitrary: utf8.map((b) => el(0x0c, b)) },
  {
    weight: 3,
    arbitrary: fc.stringMatching(/^[A-Za-z0-9 '()+,./:?=-]{0,20}$/).map((s) => el(0x13, Buffer.from(s))),
  },
  raw.map((b) => el(0x0c, b)),
  raw.map((b) => el(0x13, b)),
  fc.constantFrom(0x16, 0x1e, 0x14, 0x1c, 0x04).chain((tag) => raw.map((b) => el(tag, b))),
  fc.string({ minLength: 1, maxLength: 20 }).map((v) => longForm(0x0c, Buffer.from(v, 'utf8'))),
);
const atv = fc.tuple(oid, attributeValue).map(([o, v]) => el(0x30, o, v));
const rdn = fc.oneof(
  { weight: 8, arbitrary: atv.map((a) => el(0x31, a)) },
  fc.array(atv, { minLength: 2, maxLength: 3 }).map((atvs) => el(0x31, ...atvs)),
);
/** The signer's shape (known types, non-empty UTF8String or PrintableString), or anything. */
const plainAtv = fc
  .tuple(
    fc.constantFrom(...KNOWN_OIDS),
    fc.oneof(
      fc
        .string({ unit: 'grapheme', minLength: 1, maxLength: 70 })
        .map((v) => el(0x0c, Buffer.from(v, 'utf8'))),
      fc.stringMatching(/^[A-Za-z0-9-]{1,20}$/).map((v) => el(0x13, Buffer.from(v))),
    ),
  )
  .map(([o, v]) => el(0x31, el(0x30, o, v)));
const subject = fc.oneof(
  { weight: 3, arbitrary: fc.array(plainAtv, { maxLength: 7 }).map((rdns) => el(0x30, ...rdns)) },
  { weight: 2, arbitrary: fc.array(rdn, { maxLength: 7 }).map((rdns) => el(0x30, ...rdns)) },
);

/** [0] attributes: mostly none, or a challenge password, or an extension request. */
const attributes = fc.oneof(
  { weight: 8, arbitrary: fc.constant(Buffer.from([0xa0, 0x00])) },
  utf8.map((b) => el(0xa0, el(0x30, oidDer([1, 2, 840, 113549, 1, 9, 7]), el(0x31, el(0x0c, b))))),
  raw.map((b) =>
    el(
      0xa0,
      el(
        0x30,
        oidDer([1, 2, 840, 113549, 1, 9, 14]),
        el(0x31, el(0x30, el(0x30, oidDer([2, 5, 29, 17]), el(0x04, b)))),
      ),
    ),
  ),
);

const version = fc.oneof({ weight: 19, arbitrary: fc.constant(0) }, fc.constant(1));

/** The key and scheme that sign a CSR; now and then a scheme of the other family, or RSA without NULL. */
const signing = fc.constantFrom(...KEYS).chain((key) =>
  fc.record({
    key: fc.constant(key),
    spki: fc.oneof({ weight: 9, arbitrary: fc.constant(key.spkis[0]) }, fc.constant(key.spkis[1])),
    scheme: fc.oneof(
      {
        weight: 15,
        arbitrary: fc.constantFrom(
          ...SCHEMES.filter((s) => (s.signatureAlgorithm === 'ECDSA') === (key.family === 'EC')),
        ),
      },
      fc.constantFrom(...SCHEMES),
    ),
    withoutNull: fc.oneof({ weight: 9, arbitrary: fc.constant(false) }, fc.constant(true)),
  }),
);

type Signing = { key: Key; scheme: (typeof SCHEMES)[number]; withoutNull: boolean };

function signedCsr(info: Buffer, s: Signing): Buffer {
  const hash = s.scheme.digestAlgorithm.replace('SHA-', 'sha');
  const signature =
    s.key.family === 'EC'
      ? sign(hash, info, { key: s.key.privateKey, dsaEncoding: 'der' })
      : sign(hash, info, s.key.privateKey);
  const algorithm =
    s.withoutNull && s.scheme.signatureAlgorithm !== 'ECDSA'
      ? el(0x30, algorithmIdentifierDer(algorithmIdentifier(s.scheme)).subarray(2, -2))
      : algorithmIdentifierDer(algorithmIdentifier(s.scheme));
  return el(0x30, info, algorithm, el(0x03, Buffer.from([0]), signature));
}

const csr = fc
  .record({ signing, version, subject, attributes })
  .map(({ signing: s, version: v, subject: name, attributes: attrs }) => {
    const rebuild = (subjectDer: Buffer): Buffer =>
      signedCsr(el(0x30, Buffer.from([0x02, 0x01, v]), subjectDer, s.spki, attrs), s);
    const info = el(0x30, Buffer.from([0x02, 0x01, v]), name, s.spki, attrs);
    return { info, name, rebuild, signing: s, der: signedCsr(info, s) };
  });

function outcome(verify: (der: Buffer) => unknown, der: Buffer): unknown {
  try {
    return { result: verify(der) };
  } catch (err) {
    return { error: `${(err as Error).name}: ${(err as Error).message}` };
  }
}

function mutate(bytes: Buffer): fc.Arbitrary<Buffer> {
  return fc.oneof(
    fc.tuple(fc.nat({ max: bytes.length - 1 }), fc.integer({ min: 1, max: 255 })).map(([i, x]) => {
      const copy = Buffer.from(bytes);
      copy[i] ^= x;
      return copy;
    }),
    fc.nat({ max: bytes.length - 1 }).map((n) => bytes.subarray(0, n)),
    fc
      .tuple(fc.nat({ max: bytes.length }), fc.uint8Array({ minLength: 1, maxLength: 3 }))
      .map(([i, extra]) => Buffer.concat([bytes.subarray(0, i), extra, bytes.subarray(i)])),
  );
}

test('random CSRs: the fast reader and the full parse give the same result or the same error', () => {
  const seen = { fast: 0, accepted: 0, refused: 0 };
  fc.assert(
    fc.property(csr, ({ der }) => {
      const fast = outcome(verifyCsr, der);
      expect(fast).toEqual(outcome(verifyCsrByParse, der));
      if (readCsrFast(der)) seen.fast++;
      if ('result' in (fast as object)) seen.accepted++;
      else seen.refused++;
    }),
    { numRuns: 1500 },
  );
  // The fast path carried many, and the full parse both accepted and refused others.
  expect(seen.fast).toBeGreaterThan(200);
  expect(seen.accepted - seen.fast).toBeGreaterThan(50);
  expect(seen.refused).toBeGreaterThan(50);
});

test('mutated CSRs (whole, or the signed info re-signed): both refuse alike or accept alike', () => {
  const seen = { fast: 0, refused: 0 };
  fc.assert(
    fc.property(
      csr.chain(({ info, signing: s, der }) =>
        fc.oneof(
          mutate(der),
          mutate(info).map((changed) => signedCsr(changed, s)),
        ),
      ),
      (der) => {
        const fast = outcome(verifyCsr, der);
        expect(fast).toEqual(outcome(verifyCsrByParse, der));
        if (readCsrFast(der)) seen.fast++;
        if (!('result' in (fast as object))) seen.refused++;
      },
    ),
    { numRuns: 4000 },
  );
  // Most mutations leave no CSR of the signer's shape that still verifies; some do (a changed value).
  expect(seen.fast).toBeGreaterThan(5);
  expect(seen.refused).toBeGreaterThan(1000);
});

test('an empty subject, two signatures of one info: read alike by both paths', () => {
  // ECDSA is randomised: two CSRs of the same info differ in their signatures only.
  const s = {
    key: KEYS[0],
    scheme: SCHEMES.find((x) => x.signatureAlgorithm === 'ECDSA')!,
    withoutNull: false,
  };
  const info = el(0x30, Buffer.from([2, 1, 0]), el(0x30), KEYS[0].spkis[0], Buffer.from([0xa0, 0]));
  const [a, b] = [signedCsr(info, s), signedCsr(info, s)];
  expect(createHash('sha256').update(a).digest()).not.toEqual(createHash('sha256').update(b).digest());
  expect(readCsrFast(a)).toEqual(readCsrFast(b));
  expect(readCsrFast(a)).toEqual(verifyCsrByParse(a));
});
