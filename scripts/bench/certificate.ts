/**
 * `npm run bench -- certificate [--n N]`: the CPU the CA spends encoding a leaf certificate, without its
 * HSM signature (a fixed 64-octet "signature"): the full `@peculiar` schema encoding (signCertificate
 * with leafExtensions) against the template that splices the variable fields into DER encoded once
 * (LeafCertificateTemplate). Both include the SHA-256 of the TBSCertificate and the outer SEQUENCE.
 * Median and p99 of N certificates each (default 2,000, after 200 of warm-up), alternating.
 *
 * Then the proof-of-possession CSR's round, old path against new, for an EC-P256 and an RSA-2048 key:
 * the signer's build (buildCsrBySchema against the template's buildCsr; the HSM's signature a fixed one),
 * the signer's own check (the full verifyCsrByParse against verifyOwnCsr) and the CA's (verifyCsrByParse,
 * parsedPublicKey and the schema's subject DER against verifyCsr, canonicalPublicKey and nameDerOf), each
 * on a CSR whose signature verifies (made with node:crypto), N rounds alternating.
 */
import { generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import { AsnConvert } from '@peculiar/asn1-schema';
import {
  LeafCertificateTemplate,
  buildCsr,
  buildCsrBySchema,
  derChildren,
  encodeName,
  leafExtensions,
  nameDerOf,
  randomSerial,
  signCertificate,
  verifyCsr,
  verifyCsrByParse,
  verifyOwnCsr,
  type CertificateSigner,
  type LeafVariables,
} from '@pipeline/der';
import { canonicalPublicKey, parsedPublicKey } from '@pipeline/core/pki';
import { subjectAttributes, type SignerIdentity } from '@pipeline/core/identity';
import type { KeyType } from '@pipeline/core/shared';
import { finish, option, printTable } from './report';
import { median, msSince, percentile, round } from './stats';

export async function run(args: string[]): Promise<void> {
  const n = Number(option(args, 'n') ?? 2000);
  const signer: CertificateSigner = {
    name: encodeName([
      { oid: '2.5.4.6', kind: 'printableString', value: 'SE' },
      { oid: '2.5.4.3', kind: 'utf8String', value: 'Signing Pipeline Issuing CA' },
    ]),
    keyType: 'EC-P256',
    keyIdentifier: randomBytes(20),
    sign: () => Promise.resolve(Buffer.alloc(64, 1)),
  };
  const pointers = {
    issuerKeyIdentifier: signer.keyIdentifier,
    policyOid: '1.2.752.201.3.1',
    crlUrl: 'http://127.0.0.1:8080/pki/issuing.crl',
    caIssuersUrl: 'http://127.0.0.1:8080/pki/issuing.cer',
    ocspUrl: 'http://127.0.0.1:8080/pki/ocsp',
  };
  const spki = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({
    type: 'spki',
    format: 'der',
  });
  // An authentication context of the size the CA writes (saci XML, about 1 kB).
  const contextInfo = `<saci:SAMLAuthContext xmlns:saci="http://id.elegnamnden.se/auth-cont/1.0/saci">${'x'.repeat(900)}</saci:SAMLAuthContext>`;
  const leaf = (): LeafVariables => ({
    serial: randomSerial(),
    notBefore: new Date(Date.now() - 60_000),
    notAfter: new Date(Date.now() + 86_400_000),
    subject: encodeName([
      { oid: '2.5.4.6', kind: 'printableString', value: 'SE' },
      { oid: '2.5.4.5', kind: 'printableString', value: `19${randomBytes(5).toString('hex')}` },
      { oid: '2.5.4.42', kind: 'utf8String', value: 'Tomas' },
      { oid: '2.5.4.4', kind: 'utf8String', value: 'Testsson' },
      { oid: '2.5.4.3', kind: 'utf8String', value: 'Tomas Testsson' },
    ]),
    subjectPublicKeySpki: spki,
    authContexts: [{ contextType: 'http://id.elegnamnden.se/auth-cont/1.0/saci', contextInfo }],
  });
  const full = (v: LeafVariables): Promise<Buffer> =>
    signCertificate(
      {
        ...v,
        extensions: leafExtensions({
          ...pointers,
          subjectPublicKeySpki: v.subjectPublicKeySpki,
          authContexts: v.authContexts,
        }),
      },
      signer,
    );
  const template = new LeafCertificateTemplate(pointers, signer);
  const times = { full: [] as number[], template: [] as number[] };
  for (let i = 0; i < n + 200; i++) {
    const v = leaf();
    let t = process.hrtime.bigint();
    const a = await full(v);
    const fullMs = msSince(t);
    t = process.hrtime.bigint();
    const b = await template.sign(v, signer.sign);
    const templateMs = msSince(t);
    if (!a.equals(b)) throw new Error('the template and the schema encoding differ');
    if (i >= 200) {
      times.full.push(fullMs);
      times.template.push(templateMs);
    }
  }
  const row = (name: string, values: number[]) => ({
    encoding: name,
    certificates: values.length,
    'median µs': round(median(values) * 1000, 1),
    'p99 µs': round(percentile(values, 99) * 1000, 1),
  });
  const rows = [row('schema (signCertificate)', times.full), row('template', times.template)];
  printTable('leaf certificate encoding, EC-P256 issuer, no HSM signature', rows);
  const csr = [...(await csrRound('EC-P256', n)), ...(await csrRound('RSA-2048', n))];
  printTable('proof-of-possession CSR, old path against new (µs per CSR, median)', csr);
  finish('certificate', { n, results: rows, csr });
}

const IDENTITY: SignerIdentity = {
  commonName: 'Tomas Testsson',
  givenName: 'Tomas',
  surname: 'Testsson',
  serialNumber: '197001011234',
  country: 'SE',
};

/** The three CSR steps for one key type: old and new path alternating, each result checked equal. */
async function csrRound(keyType: KeyType, n: number): Promise<Array<Record<string, string | number>>> {
  const pair =
    keyType === 'RSA-2048'
      ? generateKeyPairSync('rsa', { modulusLength: 2048 })
      : generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const spki = pair.publicKey.export({ type: 'spki', format: 'der' });
  // A real signature: the info is the same for the same subject and key, so it is made once here.
  const fixed = Buffer.alloc(keyType === 'RSA-2048' ? 256 : 72, 1);
  const input = { subject: IDENTITY, keyType, publicKeySpki: spki, sign: () => Promise.resolve(fixed) };
  const info = derChildren(await buildCsr(input))[0];
  const signature = signWith(pair.privateKey, keyType, info);
  const valid = await buildCsr({ ...input, sign: () => Promise.resolve(signature) });

  const steps = {
    'CSR build (signer)': {
      old: () => buildCsrBySchema(input),
      new: () => buildCsr(input),
    },
    'own check (signer)': {
      old: () => verifyCsrByParse(valid),
      new: () => verifyOwnCsr(valid, spki),
    },
    'CSR verify (CA)': {
      old: () => {
        const csr = verifyCsrByParse(valid);
        const key = parsedPublicKey(csr.publicKeySpki);
        const subject = Buffer.from(AsnConvert.serialize(encodeName(subjectAttributes(IDENTITY))));
        return [csr, key, subject.equals(csr.subjectDer)];
      },
      new: () => {
        const csr = verifyCsr(valid);
        const key = canonicalPublicKey(csr.publicKeySpki);
        const subject = nameDerOf(subjectAttributes(IDENTITY));
        return [csr, key, subject.equals(csr.subjectDer)];
      },
    },
  };
  const rows: Array<Record<string, string | number>> = [];
  for (const [step, paths] of Object.entries(steps)) {
    const times = { old: [] as number[], new: [] as number[] };
    for (let i = 0; i < n + 200; i++) {
      let t = process.hrtime.bigint();
      const a = await paths.old();
      const oldMs = msSince(t);
      t = process.hrtime.bigint();
      const b = await paths.new();
      const newMs = msSince(t);
      if (step !== 'own check (signer)' && JSON.stringify(a) !== JSON.stringify(b)) {
        throw new Error(`${step}: the old and the new path differ`);
      }
      if (i >= 200) {
        times.old.push(oldMs);
        times.new.push(newMs);
      }
    }
    const [oldUs, newUs] = [median(times.old) * 1000, median(times.new) * 1000];
    rows.push({
      step,
      key: keyType,
      'old µs': round(oldUs, 1),
      'new µs': round(newUs, 1),
      'old/new': round(oldUs / newUs, 1),
      'old p99 µs': round(percentile(times.old, 99) * 1000, 1),
      'new p99 µs': round(percentile(times.new, 99) * 1000, 1),
    });
  }
  return rows;
}

function signWith(privateKey: KeyObject, keyType: KeyType, data: Buffer): Buffer {
  return keyType === 'RSA-2048'
    ? sign('sha256', data, privateKey)
    : sign('sha256', data, { key: privateKey, dsaEncoding: 'der' });
}
