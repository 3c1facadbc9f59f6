/**
 * A second RFC 3161 TSA on a loopback port, playing an external (qualified) one for the long-term tests:
 * a PKI of its own (a root and a TSA certificate, software RSA-2048 keys; the pipeline's root knows
 * nothing of it), its tokens made with the pipeline's own TSA code, and the root's CRL published where the
 * TSA certificate's CRL distribution point says. It counts the CRL fetches.
 */
import { constants, generateKeyPairSync, privateEncrypt, type KeyObject } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  caExtensions,
  encodeName,
  keyIdentifier,
  parseTimeStampRequest,
  randomSerial,
  signCertificate,
  signCrl,
  signTimeStampResponse,
  tsaExtensions,
  type CertificateSigner,
} from '@pipeline/der';

export interface ExternalTsa {
  /** POST RFC 3161 requests here. */
  readonly url: string;
  readonly rootPem: string;
  readonly rootDer: Buffer;
  /** The root's CRL (the TSA certificate's status). */
  readonly crlDer: Buffer;
  /** How many times its CRL was fetched. */
  crlFetches(): number;
  stop(): Promise<void>;
}

const DAY_MS = 86_400_000;

function softwareKey(): { privateKey: KeyObject; spki: Buffer } {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { privateKey, spki: publicKey.export({ type: 'spki', format: 'der' }) };
}

/** DER DigestInfo prefixes (RFC 8017 9.2 note 1): PKCS#1 v1.5 signs DigestInfo(digest). */
const DIGEST_INFO: Readonly<Record<string, string>> = {
  'SHA-256': '3031300d060960864801650304020105000420',
  'SHA-384': '3041300d060960864801650304020205000430',
  'SHA-512': '3051300d060960864801650304020305000440',
};

function signer(commonName: string, key: { privateKey: KeyObject; spki: Buffer }): CertificateSigner {
  return {
    name: encodeName([
      { oid: '2.5.4.6', kind: 'printableString', value: 'SE' },
      { oid: '2.5.4.3', kind: 'utf8String', value: commonName },
    ]),
    keyType: 'RSA-2048',
    keyIdentifier: keyIdentifier(key.spki),
    // RSASSA-PKCS1-v1_5 over the digest as given (Node's sign() would hash it again), as an HSM does.
    sign: async (digest, options) =>
      privateEncrypt(
        { key: key.privateKey, padding: constants.RSA_PKCS1_PADDING },
        Buffer.concat([Buffer.from(DIGEST_INFO[options.digestAlgorithm], 'hex'), digest]),
      ),
  };
}

const toPem = (der: Buffer): string =>
  `-----BEGIN CERTIFICATE-----\n${der
    .toString('base64')
    .match(/.{1,64}/g)!
    .join('\n')}\n-----END CERTIFICATE-----\n`;

export async function startExternalTsa(): Promise<ExternalTsa> {
  let crlFetches = 0;
  // Made once the server's port (in the certificate's CRL distribution point) is known.
  const issued: { crl?: Buffer; tsaCertificateDer?: Buffer } = {};
  const rootKey = softwareKey();
  const tsaKey = softwareKey();
  const rootSigner = signer('External Time-Stamping Root', rootKey);
  const tsaSigner = signer('External Time-Stamping Unit', tsaKey);

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      void (async () => {
        if (req.method === 'GET' && req.url === '/root.crl' && issued.crl) {
          crlFetches++;
          res.writeHead(200, { 'Content-Type': 'application/pkix-crl' }).end(issued.crl);
          return;
        }
        if (req.method === 'POST' && req.url === '/tsa' && issued.tsaCertificateDer) {
          const reply = await signTimeStampResponse({
            request: parseTimeStampRequest(Buffer.concat(chunks)),
            policy: '1.3.6.1.4.1.32473.9.1',
            serial: randomSerial(),
            genTime: new Date(Math.floor(Date.now() / 1000) * 1000),
            accuracySeconds: 1,
            tsaCertificateDer: issued.tsaCertificateDer,
            signer: tsaSigner,
          });
          res.writeHead(200, { 'Content-Type': 'application/timestamp-reply' }).end(reply);
          return;
        }
        res.writeHead(404).end();
      })().catch(() => res.writeHead(500).end());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const now = Date.now();
  const rootDer = await signCertificate(
    {
      serial: randomSerial(),
      subject: rootSigner.name,
      subjectPublicKeySpki: rootKey.spki,
      notBefore: new Date(now - DAY_MS),
      notAfter: new Date(now + 20 * 365 * DAY_MS),
      extensions: caExtensions({ subjectPublicKeySpki: rootKey.spki }),
    },
    rootSigner,
  );
  issued.tsaCertificateDer = await signCertificate(
    {
      serial: randomSerial(),
      subject: tsaSigner.name,
      subjectPublicKeySpki: tsaKey.spki,
      notBefore: new Date(now - DAY_MS),
      notAfter: new Date(now + 10 * 365 * DAY_MS),
      extensions: tsaExtensions({
        subjectPublicKeySpki: tsaKey.spki,
        issuerKeyIdentifier: rootSigner.keyIdentifier,
        crlUrl: `${base}/root.crl`,
        caIssuersUrl: `${base}/root.cer`,
      }),
    },
    rootSigner,
  );
  const crlDer = await signCrl(
    { number: 1, thisUpdate: new Date(now - 60_000), nextUpdate: new Date(now + 7 * DAY_MS), revoked: [] },
    rootSigner,
  );
  issued.crl = crlDer;
  return {
    url: `${base}/tsa`,
    rootPem: toPem(rootDer),
    rootDer,
    crlDer,
    crlFetches: () => crlFetches,
    stop: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
