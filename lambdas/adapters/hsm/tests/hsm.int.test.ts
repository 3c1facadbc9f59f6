/**
 * Integration tests of the PKCS#11 adapter against the real SoftHSM token made by the bootstrap.
 */
import { execFileSync } from 'node:child_process';
import { createHash, createPublicKey, verify, randomBytes } from 'node:crypto';
import { join } from 'node:path';
import {
  DIGEST_ALGORITHMS,
  KEY_TYPES,
  nodeHashName,
  signatureAlgorithmsFor,
  type DigestAlgorithm,
  type KeyType,
  type SignatureAlgorithm,
} from '@pipeline/core/shared';
import { loadConfig } from '@pipeline/config';
import { opensslVerifyDigest } from '../../../../scripts/local/verify/openssl';
import { canonicalPublicKey } from '@pipeline/core/pki';
import { HsmKeyNotExtractableError, HsmUnwrapError } from '@pipeline/core/shared';
import { Pkcs11Hsm, connectHsm, type Hsm } from '../src';

const TSX = join(__dirname, '../../../../node_modules/.bin/tsx');
const config = loadConfig(process.env);
const WRAP = config.hsm.wrapKeyLabel;
let hsm: Pkcs11Hsm;

beforeAll(async () => {
  hsm = await connectHsm(config.hsm, config.aws);
});

afterAll(async () => {
  await hsm?.close();
});

function nodeVerify(
  spki: Buffer,
  digestAlgorithm: DigestAlgorithm,
  signatureAlgorithm: SignatureAlgorithm,
  data: Buffer,
  signature: Buffer,
): boolean {
  const key = createPublicKey({ key: spki, format: 'der', type: 'spki' });
  const padding =
    signatureAlgorithm === 'RSASSA-PSS'
      ? {
          padding: 6 /* RSA_PKCS1_PSS_PADDING */,
          saltLength: createHash(nodeHashName(digestAlgorithm)).digest().length,
        }
      : {};
  return verify(nodeHashName(digestAlgorithm), data, { key, ...padding }, signature);
}

async function poolKeyRoundTrip(hsm: Hsm, keyType: KeyType) {
  const generated = await hsm.generateKeyPair(keyType, { extractable: true });
  const wrapped = await hsm.wrapPrivateKey(generated.privateKey, WRAP);
  await hsm.destroy(generated.privateKey);
  const unwrapped = await hsm.unwrapPrivateKey(wrapped, keyType, WRAP);
  return { spki: generated.publicKeySpki, wrapped, unwrapped };
}

const cases: Array<[KeyType, SignatureAlgorithm, DigestAlgorithm]> = [];
for (const keyType of KEY_TYPES) {
  for (const scheme of signatureAlgorithmsFor(keyType)) {
    // Every digest for the common key types; SHA-256 alone for the slow RSA-4096 keygen.
    for (const digest of keyType === 'RSA-4096' ? (['SHA-256'] as const) : DIGEST_ALGORITHMS) {
      cases.push([keyType, scheme, digest]);
    }
  }
}

describe('keygen -> wrap -> unwrap -> sign', () => {
  test.each(cases)(
    '%s %s %s verifies with Node crypto and openssl',
    async (keyType, scheme, digestAlgorithm) => {
      const { spki, wrapped, unwrapped } = await poolKeyRoundTrip(hsm, keyType);
      expect(wrapped.length).toBeGreaterThan(32);
      // The public key in its one canonical encoding, as the pool stores it and the CA requires it.
      expect(canonicalPublicKey(spki)).toMatchObject({ keyType, canonical: true });
      const data = randomBytes(100);
      const digest = createHash(nodeHashName(digestAlgorithm)).update(data).digest();
      try {
        const signature = await hsm.signDigest(unwrapped, digest, {
          digestAlgorithm,
          signatureAlgorithm: scheme,
        });
        expect(nodeVerify(spki, digestAlgorithm, scheme, data, signature)).toBe(true);
        expect(
          opensslVerifyDigest({
            publicKeySpki: spki,
            digest,
            signature,
            digestAlgorithm,
            signatureAlgorithm: scheme,
          }),
        ).toBe(true);
        // A signature over another digest must not verify: the check above can fail.
        const other = createHash(nodeHashName(digestAlgorithm)).update('other').digest();
        expect(
          opensslVerifyDigest({
            publicKeySpki: spki,
            digest: other,
            signature,
            digestAlgorithm,
            signatureAlgorithm: scheme,
          }),
        ).toBe(false);
      } finally {
        await hsm.destroy(unwrapped);
      }
    },
  );

  test('the exported public key has the requested type and size', async () => {
    for (const [keyType, expected] of [
      ['RSA-2048', { asymmetricKeyType: 'rsa', modulusLength: 2048 }],
      ['RSA-3072', { asymmetricKeyType: 'rsa', modulusLength: 3072 }],
      ['EC-P256', { asymmetricKeyType: 'ec', namedCurve: 'prime256v1' }],
      ['EC-P384', { asymmetricKeyType: 'ec', namedCurve: 'secp384r1' }],
    ] as const) {
      const pair = await hsm.generateKeyPair(keyType, { extractable: false });
      await hsm.destroy(pair.privateKey);
      const key = createPublicKey({ key: pair.publicKeySpki, format: 'der', type: 'spki' });
      expect({ asymmetricKeyType: key.asymmetricKeyType, ...key.asymmetricKeyDetails }).toMatchObject(
        expected,
      );
    }
  });
});

describe('key protection', () => {
  test('an unwrapped key is sensitive, non-extractable, sign-only and cannot be wrapped again', async () => {
    const { unwrapped } = await poolKeyRoundTrip(hsm, 'EC-P256');
    try {
      expect(await hsm.keyAttributes(unwrapped)).toEqual({
        token: false,
        sensitive: true,
        extractable: false,
        sign: true,
      });
      await expect(hsm.wrapPrivateKey(unwrapped, WRAP)).rejects.toBeInstanceOf(HsmKeyNotExtractableError);
    } finally {
      await hsm.destroy(unwrapped);
    }
  });

  test('an on-the-fly key is generated non-extractable', async () => {
    const pair = await hsm.generateKeyPair('EC-P256', { extractable: false });
    try {
      await expect(hsm.wrapPrivateKey(pair.privateKey, WRAP)).rejects.toMatchObject({
        name: 'HsmKeyNotExtractableError',
        code: 'CKR_KEY_UNEXTRACTABLE',
      });
    } finally {
      await hsm.destroy(pair.privateKey);
    }
  });

  test.each(['EC-P256', 'RSA-2048'] as const)(
    'a %s wrapped blob with one flipped byte fails with HsmUnwrapError',
    async (keyType) => {
      const pair = await hsm.generateKeyPair(keyType, { extractable: true });
      const wrapped = await hsm.wrapPrivateKey(pair.privateKey, WRAP);
      await hsm.destroy(pair.privateKey);
      for (const position of [0, Math.floor(wrapped.length / 2), wrapped.length - 1]) {
        const tampered = Buffer.from(wrapped);
        tampered[position] ^= 0x01;
        const error = await hsm.unwrapPrivateKey(tampered, keyType, WRAP).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error).toBeInstanceOf(HsmUnwrapError);
        expect((error as HsmUnwrapError).code).toMatch(/^CKR_/);
      }
      // The untouched blob still unwraps: the failures above are the flips, not the key.
      await hsm.destroy(await hsm.unwrapPrivateKey(wrapped, keyType, WRAP));
    },
  );

  test('the wrapping key is on the token, sensitive and never extractable', async () => {
    const other = await hsm.ensureWrappingKey(WRAP);
    expect(other).toBe(false); // already provisioned by the bootstrap
  });

  test('a wrong PIN fails with HsmLoginError and the PIN is not in the error', () => {
    // Login state is per process (a second C_Login in this process would be "already logged in"),
    // so the wrong PIN is tried in a fresh process.
    const wrongPin = `wrong-${randomBytes(6).toString('hex')}`;
    const script = `
      const { Pkcs11Hsm } = require(${JSON.stringify(require.resolve('../src'))});
      Pkcs11Hsm.connect({ modulePath: process.env.HSM_MODULE_PATH, tokenLabel: process.env.HSM_TOKEN_LABEL,
        profile: 'softhsm', sessionPoolSize: 1, pin: process.env.WRONG_PIN })
        .then(() => console.log(JSON.stringify({ ok: true })),
              (e) => console.log(JSON.stringify({ name: e.name, code: e.code, text: e.message + e.stack })));`;
    const out = execFileSync(TSX, ['-e', script], {
      env: { ...process.env, WRONG_PIN: wrongPin },
      encoding: 'utf8',
    });
    const result = JSON.parse(out.trim().split('\n').pop()!) as { name: string; code: string; text: string };
    expect(result).toMatchObject({ name: 'HsmLoginError', code: 'CKR_PIN_INCORRECT' });
    expect(result.text).not.toContain(wrongPin);
  });
});

describe('concurrency and cleanliness', () => {
  test('concurrent operations share the session pool and leave no session objects behind', async () => {
    const before = await hsm.countSessionObjects();
    const digest = createHash('sha256').update('concurrent').digest();
    const results = await Promise.all(
      Array.from({ length: 24 }, async (_, i) => {
        const keyType: KeyType = i % 2 ? 'EC-P256' : 'EC-P384';
        const { spki, unwrapped } = await poolKeyRoundTrip(hsm, keyType);
        try {
          const signature = await hsm.signDigest(unwrapped, digest, {
            digestAlgorithm: 'SHA-256',
            signatureAlgorithm: 'ECDSA',
          });
          return nodeVerify(spki, 'SHA-256', 'ECDSA', Buffer.from('concurrent'), signature);
        } finally {
          await hsm.destroy(unwrapped);
        }
      }),
    );
    expect(results.every(Boolean)).toBe(true);
    expect(await hsm.countSessionObjects()).toBe(before);
    expect(before).toBe(0);
  });

  test('a destroyed key can no longer sign', async () => {
    const pair = await hsm.generateKeyPair('EC-P256', { extractable: false });
    await hsm.destroy(pair.privateKey);
    await expect(
      hsm.signDigest(pair.privateKey, Buffer.alloc(32, 1), {
        digestAlgorithm: 'SHA-256',
        signatureAlgorithm: 'ECDSA',
      }),
    ).rejects.toMatchObject({
      name: 'HsmError',
      code: expect.stringMatching(/^CKR_(OBJECT|KEY)_HANDLE_INVALID$/),
    });
  });
});
