/**
 * The operator's CA bootstrap on a cluster (scripts/ca-bootstrap.ts, docs/operations.md "Cluster initialisation"),
 * run as an operator runs it, against the local SoftHSM tokens standing in for the cluster's crypto
 * users: the OCSP responder's and the TSA's keys are each made by their own user (`ocsp-key`, `tsa-key`),
 * and the CA user certifies the public keys it is given, never making a TSA key of its own. Fixed test
 * labels (an EC P-384 CA), so repeated runs reuse the same keys; the certificates go to a temporary
 * directory.
 */
import { X509Certificate, createPublicKey } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectHsm } from '@pipeline/adapters/hsm';
import { findCaKey } from '@pipeline/ca';
import { loadCaConfig, loadConfig } from '@pipeline/config';

jest.setTimeout(120_000);

const ROOT = join(__dirname, '..');
const TSX = join(ROOT, 'node_modules/.bin/tsx');
const LABELS = {
  CA_KEY_TYPE: 'EC-P384',
  CA_ROOT_KEY_LABEL: 'test-cli-root-p384-v1',
  CA_ISSUING_KEY_LABEL: 'test-cli-issuing-p384-v1',
  CA_OCSP_KEY_LABEL: 'test-cli-ocsp-v1',
  CA_TSA_KEY_LABEL: 'test-cli-tsa-v1',
};
let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'ca-bootstrap-cli-'));
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

function caBootstrap(args: string[]): string {
  return execFileSync(TSX, ['scripts/ca-bootstrap.ts', ...args], {
    cwd: ROOT,
    env: { ...process.env, ...LABELS, CA_CERTS_SOURCE: `file:${join(dir, 'certs')}` },
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

const spkiOfPem = (pem: string): Buffer =>
  createPublicKey(pem).export({ type: 'spki', format: 'der' }) as Buffer;

test('ocsp-key and tsa-key as their own users, then the hierarchy as the CA user for those public keys', async () => {
  const ocspPem = join(dir, 'ocsp.pem');
  const tsaPem = join(dir, 'tsa.pem');
  caBootstrap(['ocsp-key', ocspPem]);
  caBootstrap(['tsa-key', tsaPem]);
  const tsaKey = readFileSync(tsaPem, 'utf8');
  // Idempotent: the second run finds the key and writes the same public key.
  caBootstrap(['tsa-key', tsaPem]);
  expect(readFileSync(tsaPem, 'utf8')).toBe(tsaKey);

  caBootstrap(['--ocsp-public-key', ocspPem, '--tsa-public-key', tsaPem]);
  const root = new X509Certificate(readFileSync(join(dir, 'certs', 'root.pem')));
  const tsaCert = new X509Certificate(readFileSync(join(dir, 'certs', 'tsa.pem')));
  const ocspCert = new X509Certificate(readFileSync(join(dir, 'certs', 'ocsp.pem')));
  expect(tsaCert.verify(root.publicKey)).toBe(true);
  expect(tsaCert.keyUsage).toEqual(['1.3.6.1.5.5.7.3.8']); // id-kp-timeStamping
  expect(spkiOfPem(tsaCert.publicKey.export({ type: 'spki', format: 'pem' }) as string)).toEqual(
    spkiOfPem(tsaKey),
  );
  expect(spkiOfPem(ocspCert.publicKey.export({ type: 'spki', format: 'pem' }) as string)).toEqual(
    spkiOfPem(readFileSync(ocspPem, 'utf8')),
  );

  // The TSA key is the TSA user's, on its token; the CA user has none under that label.
  const config = loadConfig(process.env);
  const ca = loadCaConfig({ ...process.env, ...LABELS });
  const tsaHsm = await connectHsm(
    { ...config.hsm, pinSource: ca.tsaPinSource, tokenLabel: ca.tsaTokenLabel, sessionPoolSize: 1 },
    config.aws,
  );
  try {
    expect((await findCaKey(tsaHsm, LABELS.CA_TSA_KEY_LABEL, 'EC-P256'))?.spki).toEqual(spkiOfPem(tsaKey));
  } finally {
    await tsaHsm.close();
  }
  const caHsm = await connectHsm({ ...config.hsm, pinSource: ca.pinSource, sessionPoolSize: 1 }, config.aws);
  try {
    expect(await findCaKey(caHsm, LABELS.CA_TSA_KEY_LABEL, 'EC-P256')).toBeUndefined();
    expect(await findCaKey(caHsm, LABELS.CA_OCSP_KEY_LABEL, 'EC-P256')).toBeUndefined();
  } finally {
    await caHsm.close();
  }
});
