/** A fake built layer directory (manifest + the files the check looks for), for tests only. */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import {
  certificateSha256,
  LAYER_MANIFEST_FILE,
  type LayerManifest,
} from '../../cdk/lib/constructs/cloudhsm-layer';
import pkg from '../../package.json';

/** Any well-formed base64 body works: the check hashes the DER bytes, it does not parse them. */
export const TEST_CA_PEM = `-----BEGIN CERTIFICATE-----\n${Buffer.from('test cluster CA '.repeat(20))
  .toString('base64')
  .replace(/(.{64})/g, '$1\n')}\n-----END CERTIFICATE-----\n`;

export function fakeLayer(overrides: Partial<LayerManifest> = {}, omit: string[] = []): string {
  const dir = mkdtempSync(join(tmpdir(), 'cloudhsm-layer-'));
  const manifest: LayerManifest = {
    kind: 'cloudhsm-pkcs11-layer',
    architecture: 'x86_64',
    nodeMajor: 24,
    cloudHsmSdkVersion: '5.16.2',
    pkcs11jsVersion: pkg.dependencies.pkcs11js,
    clusterId: 'cluster-abc123',
    hsmCaCertSha256: certificateSha256(TEST_CA_PEM),
    ...overrides,
  };
  const files: Record<string, string> = {
    [LAYER_MANIFEST_FILE]: JSON.stringify(manifest),
    'cloudhsm/lib/libcloudhsm_pkcs11.so': 'ELF',
    'cloudhsm/etc/cloudhsm-pkcs11.cfg': '{}',
    'nodejs/node_modules/pkcs11js/package.json': '{}',
  };
  for (const [file, content] of Object.entries(files)) {
    if (omit.includes(file)) continue;
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), content);
  }
  return dir;
}
