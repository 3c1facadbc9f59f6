/**
 * `npm run bench -- certificate [--n N]`: the CPU the CA spends encoding a leaf certificate, without its
 * HSM signature (a fixed 64-octet "signature"): the full `@peculiar` schema encoding (signCertificate
 * with leafExtensions) against the template that splices the variable fields into DER encoded once
 * (LeafCertificateTemplate). Both include the SHA-256 of the TBSCertificate and the outer SEQUENCE.
 * Median and p99 of N certificates each (default 2,000, after 200 of warm-up), alternating.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import {
  LeafCertificateTemplate,
  encodeName,
  leafExtensions,
  randomSerial,
  signCertificate,
  type CertificateSigner,
  type LeafVariables,
} from '@pipeline/der';
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
  finish('certificate', { n, results: rows });
}
