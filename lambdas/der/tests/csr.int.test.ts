/**
 * CSRs built with keys held in the real SoftHSM token, checked independently with `openssl req -verify`,
 * and proof-of-possession checks that must refuse what does not verify.
 */
import { execFileSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AsnConvert } from '@peculiar/asn1-schema';
import { CertificationRequest } from '@peculiar/asn1-csr';
import { SubjectPublicKeyInfo } from '@peculiar/asn1-x509';
import { loadConfig } from '@pipeline/config';
import { connectHsm, type Pkcs11Hsm, type PrivateKeyRef } from '@pipeline/adapters/hsm';
import { InvalidIdentityError, type SignerIdentity } from '@pipeline/core/identity';
import type { KeyType } from '@pipeline/core/shared';
import {
  BadCsrError,
  CsrSignatureInvalidError,
  buildCsr,
  pem,
  verifyCsr,
  verifyCsrByParse,
  verifyOwnCsr,
} from '../src';
import { readCsrFast } from '../src/csr-reader';

const IDENTITY: SignerIdentity = {
  commonName: 'Åsa Öberg-Nilsson',
  givenName: 'Åsa',
  surname: 'Öberg-Nilsson',
  serialNumber: '197001011234',
  country: 'SE',
};

const config = loadConfig(process.env);
let hsm: Pkcs11Hsm;
const keys: PrivateKeyRef[] = [];

beforeAll(async () => {
  hsm = await connectHsm(config.hsm, config.aws);
});

afterAll(async () => {
  for (const key of keys) await hsm.destroy(key);
  await hsm?.close();
});

async function csrFor(keyType: KeyType, subject: SignerIdentity = IDENTITY) {
  const pair = await hsm.generateKeyPair(keyType, { extractable: false });
  keys.push(pair.privateKey);
  const der = await buildCsr({
    subject,
    keyType,
    publicKeySpki: pair.publicKeySpki,
    sign: (d, o) => hsm.signDigest(pair.privateKey, d, o),
  });
  return { der, spki: pair.publicKeySpki, key: pair.privateKey };
}

function openssl(args: string[], files: Record<string, string | Buffer>): string {
  const dir = mkdtempSync(join(tmpdir(), 'csr-'));
  try {
    for (const [name, content] of Object.entries(files)) writeFileSync(join(dir, name), content);
    return execFileSync('openssl', args, { cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const EXPECTED_ALGORITHM: Record<KeyType, string> = {
  'RSA-2048': 'sha256WithRSAEncryption',
  'RSA-3072': 'sha256WithRSAEncryption',
  'RSA-4096': 'sha256WithRSAEncryption',
  'EC-P256': 'ecdsa-with-SHA256',
  'EC-P384': 'ecdsa-with-SHA384',
};

describe.each<KeyType>(['RSA-2048', 'RSA-3072', 'EC-P256', 'EC-P384'])(
  'CSR with an HSM %s key',
  (keyType) => {
    it('verifies with openssl and with verifyCsr, with the scheme of its key type', async () => {
      const { der, spki } = await csrFor(keyType);
      const text = openssl(['req', '-in', 'r.pem', '-noout', '-verify', '-text', '-nameopt', 'utf8'], {
        'r.pem': pem('CERTIFICATE REQUEST', der),
      });
      expect(text).toContain(`Signature Algorithm: ${EXPECTED_ALGORITHM[keyType]}`);
      expect(text).toContain('CN=Åsa Öberg-Nilsson');
      const verified = verifyCsr(der);
      expect(verified).toEqual({ keyType, publicKeySpki: spki, subjectDer: expect.any(Buffer) });
      // The subject exactly as the CSR carries it (the CA compares it with the assertion's).
      const asn1 = openssl(['asn1parse', '-inform', 'DER', '-in', 's.der'], { 's.der': verified.subjectDer });
      expect(asn1).toContain(':countryName');
      expect(asn1).toContain(':commonName');
      // The signer's own check passes with the key it was built from; the CA's fast reader takes the
      // signer's CSR and reads what the full parse reads.
      expect(() => verifyOwnCsr(der, spki)).not.toThrow();
      expect(readCsrFast(der)).toEqual(verifyCsrByParse(der));
      expect(readCsrFast(der)).toEqual(verified);
    });
  },
);

describe("the signer's own check (verifyOwnCsr)", () => {
  it('refuses a CSR signed by another key than the pool record names (a swapped record)', async () => {
    // The record names the victim's public key, its wrapped key is the attacker's: the HSM signs with it.
    const named = await hsm.generateKeyPair('EC-P256', { extractable: false });
    const held = await hsm.generateKeyPair('EC-P256', { extractable: false });
    keys.push(named.privateKey, held.privateKey);
    const der = await buildCsr({
      subject: IDENTITY,
      keyType: 'EC-P256',
      publicKeySpki: named.publicKeySpki,
      sign: (d, o) => hsm.signDigest(held.privateKey, d, o),
    });
    expect(() => verifyOwnCsr(der, named.publicKeySpki)).toThrow(CsrSignatureInvalidError);
    // the CA's full check refuses it the same way
    expect(() => verifyCsr(der)).toThrow(CsrSignatureInvalidError);
  });

  it('refuses with the wrong key, a flipped octet anywhere, or no CSR at all', async () => {
    const { der, spki } = await csrFor('RSA-2048');
    const other = await csrFor('RSA-2048');
    expect(() => verifyOwnCsr(der, other.spki)).toThrow(CsrSignatureInvalidError);
    for (const at of [10, 40, der.length - 300, der.length - 5]) {
      const tampered = Buffer.from(der);
      tampered[at] ^= 0x01;
      expect(() => verifyOwnCsr(tampered, spki)).toThrow(CsrSignatureInvalidError);
    }
    expect(() => verifyOwnCsr(Buffer.from('not a csr'), spki)).toThrow(CsrSignatureInvalidError);
    expect(() => verifyOwnCsr(der.subarray(0, der.length - 1), spki)).toThrow(CsrSignatureInvalidError);
    expect(() => verifyOwnCsr(Buffer.concat([der, Buffer.from([0])]), spki)).toThrow(
      CsrSignatureInvalidError,
    );
    expect(() => verifyOwnCsr(der, Buffer.from('not a key'))).toThrow(CsrSignatureInvalidError);
  });
});

describe('proof of possession', () => {
  it('refuses a CSR whose public key was swapped for another key', async () => {
    const a = await csrFor('EC-P256');
    const b = await csrFor('EC-P256');
    const csr = AsnConvert.parse(a.der, CertificationRequest);
    csr.certificationRequestInfo.subjectPKInfo = AsnConvert.parse(b.spki, SubjectPublicKeyInfo);
    delete csr.certificationRequestInfoRaw;
    const forged = Buffer.from(AsnConvert.serialize(csr));
    expect(() => verifyCsr(forged)).toThrow(CsrSignatureInvalidError);
  });

  it('refuses a CSR signed by another key of the same type', async () => {
    const victim = await hsm.generateKeyPair('RSA-2048', { extractable: false });
    const attacker = await hsm.generateKeyPair('RSA-2048', { extractable: false });
    keys.push(victim.privateKey, attacker.privateKey);
    const der = await buildCsr({
      subject: IDENTITY,
      keyType: 'RSA-2048',
      publicKeySpki: victim.publicKeySpki,
      sign: (d, o) => hsm.signDigest(attacker.privateKey, d, o),
    });
    expect(() => verifyCsr(der)).toThrow(CsrSignatureInvalidError);
  });

  it('refuses a CSR with a flipped signature bit', async () => {
    const { der } = await csrFor('EC-P384');
    const tampered = Buffer.from(der);
    tampered[tampered.length - 5] ^= 0x01;
    expect(() => verifyCsr(tampered)).toThrow(CsrSignatureInvalidError);
  });

  it('refuses garbage, truncation and trailing bytes as BadCsrError', async () => {
    const { der } = await csrFor('EC-P256');
    expect(() => verifyCsr(Buffer.from('not a csr'))).toThrow(BadCsrError);
    expect(() => verifyCsr(der.subarray(0, der.length - 1))).toThrow(BadCsrError);
    expect(() => verifyCsr(Buffer.concat([der, Buffer.from([0])]))).toThrow(BadCsrError);
    expect(() => verifyCsr(Buffer.alloc(0))).toThrow(BadCsrError);
  });

  it('refuses an unsupported key (RSA-1024) as BadCsrError', () => {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 1024 });
    const out = openssl(['req', '-new', '-key', 'k.pem', '-subj', '/CN=x', '-outform', 'PEM'], {
      'k.pem': privateKey.export({ type: 'pkcs8', format: 'pem' }),
    });
    const der = Buffer.from(out.replace(/-----[^-]+-----|\s/g, ''), 'base64');
    expect(() => verifyCsr(der)).toThrow(BadCsrError);
  });

  it('accepts CSRs made by openssl (interoperability)', () => {
    for (const options of [
      { type: 'ec' as const, namedCurve: 'P-256' },
      { type: 'rsa' as const, modulusLength: 2048 },
    ]) {
      const { privateKey } =
        options.type === 'ec'
          ? generateKeyPairSync('ec', { namedCurve: options.namedCurve })
          : generateKeyPairSync('rsa', { modulusLength: options.modulusLength });
      const out = openssl(['req', '-new', '-key', 'k.pem', '-subj', '/CN=x', '-sha256'], {
        'k.pem': privateKey.export({ type: 'pkcs8', format: 'pem' }),
      });
      const der = Buffer.from(out.replace(/-----[^-]+-----|\s/g, ''), 'base64');
      expect(verifyCsr(der).keyType).toBe(options.type === 'ec' ? 'EC-P256' : 'RSA-2048');
    }
  });

  it('validates the subject before anything is signed', async () => {
    const sign = jest.fn();
    const pair = await hsm.generateKeyPair('EC-P256', { extractable: false });
    keys.push(pair.privateKey);
    await expect(
      buildCsr({
        subject: { ...IDENTITY, commonName: 'Eve,CN=Root' },
        keyType: 'EC-P256',
        publicKeySpki: pair.publicKeySpki,
        sign,
      }),
    ).rejects.toThrow(InvalidIdentityError);
    expect(sign).not.toHaveBeenCalled();
  });
});
