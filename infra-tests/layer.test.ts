/** The CloudHSM layer check: a layer built for another platform, cluster or pkcs11js is refused at synth. */
import { rmSync } from 'node:fs';
import {
  certificateSha256,
  LAYER_MANIFEST_FILE,
  verifyLayer,
  type LayerManifest,
} from '../cdk/lib/constructs/cloudhsm-layer';
import { LayerManifestError } from '../cdk/lib/errors';
import { fakeLayer, TEST_CA_PEM } from './support/layer-fixture';

describe('verifyLayer', () => {
  const dirs: string[] = [];
  const layer = (overrides?: Partial<LayerManifest>, omit?: string[]): string => {
    const dir = fakeLayer(overrides, omit);
    dirs.push(dir);
    return dir;
  };
  afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

  it('accepts a layer built for this platform, cluster and CA', () => {
    expect(verifyLayer(layer(), 'cluster-abc123', TEST_CA_PEM).cloudHsmSdkVersion).toBe('5.16.2');
  });

  it.each([
    [{ architecture: 'aarch64' }, /architecture aarch64/],
    [{ nodeMajor: 22 }, /Node.js 22/],
    [{ pkcs11jsVersion: '1.0.0' }, /pkcs11js 1.0.0/],
    [{ clusterId: 'cluster-other' }, /cluster-other/],
    [{ hsmCaCertSha256: '00'.repeat(32) }, /different cluster CA/],
  ] as [Partial<LayerManifest>, RegExp][])('refuses a mismatch: %j', (overrides, message) => {
    expect(() => verifyLayer(layer(overrides), 'cluster-abc123', TEST_CA_PEM)).toThrow(LayerManifestError);
    expect(() => verifyLayer(layer(overrides), 'cluster-abc123', TEST_CA_PEM)).toThrow(message);
  });

  it('refuses a layer without the PKCS#11 library or without a manifest', () => {
    expect(() => verifyLayer(layer({}, ['cloudhsm/lib/libcloudhsm_pkcs11.so']), 'cluster-abc123')).toThrow(
      /libcloudhsm_pkcs11.so is missing/,
    );
    expect(() => verifyLayer(layer({}, [LAYER_MANIFEST_FILE]), 'cluster-abc123')).toThrow(/build.sh/);
  });

  it('hashes the certificate DER, not its PEM layout', () => {
    const body = TEST_CA_PEM.replace(/-----(BEGIN|END) CERTIFICATE-----|\s/g, '');
    const rewrapped = `-----BEGIN CERTIFICATE-----\r\n${body.replace(/(.{76})/g, '$1\r\n')}\r\n-----END CERTIFICATE-----`;
    expect(rewrapped).not.toBe(TEST_CA_PEM);
    expect(certificateSha256(rewrapped)).toBe(certificateSha256(TEST_CA_PEM));
  });
});
