import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Annotations, CfnParameter, CfnRule, Fn, Stack } from 'aws-cdk-lib';
import { Code, LayerVersion, type ILayerVersion } from 'aws-cdk-lib/aws-lambda';
import { Construct } from 'constructs';
import { LayerManifestError } from '../errors';
import { ARCHITECTURE, LAMBDA_RUNTIME, LAYER_ARCHITECTURE, NODE_MAJOR } from '../platform';

/** Written by layers/cloudhsm/build.sh next to the layer's contents. */
export interface LayerManifest {
  readonly kind: 'cloudhsm-pkcs11-layer';
  readonly architecture: string;
  readonly nodeMajor: number;
  readonly cloudHsmSdkVersion: string;
  readonly pkcs11jsVersion: string;
  readonly clusterId: string;
  /** SHA-256 (hex) of the DER of the cluster CA certificate the layer's configuration trusts. */
  readonly hsmCaCertSha256: string;
}

export const LAYER_MANIFEST_FILE = 'layer-manifest.json';
/** Files the layer must contain, relative to its root (= /opt at run time). */
const REQUIRED_FILES = [
  'cloudhsm/lib/libcloudhsm_pkcs11.so',
  'cloudhsm/etc/cloudhsm-pkcs11.cfg',
  'nodejs/node_modules/pkcs11js/package.json',
];
/** Synth/test stand-in; the stack refuses to deploy with it (see PlaceholderLayerGuard below). */
export const PLACEHOLDER_LAYER_DIR = resolve(__dirname, '../../../layers/cloudhsm/placeholder');

export interface CloudHsmLayerProps {
  /** Directory produced by layers/cloudhsm/build.sh; undefined means the placeholder. */
  readonly layerPath?: string;
  readonly clusterId: string;
  readonly caCertificatePem?: string;
}

/**
 * The CloudHSM PKCS#11 library, its cluster configuration and pkcs11js as one Lambda layer. A real layer
 * is checked against the stack (architecture, Node.js major, pkcs11js version, cluster, CA certificate)
 * so a layer built for another cluster or platform fails at synth, not at the first sign request.
 */
export class CloudHsmLayer extends Construct {
  public readonly layer: ILayerVersion;
  public readonly isPlaceholder: boolean;

  public constructor(scope: Construct, id: string, props: CloudHsmLayerProps) {
    super(scope, id);
    this.isPlaceholder = props.layerPath === undefined;
    const dir = props.layerPath ? resolve(props.layerPath) : PLACEHOLDER_LAYER_DIR;
    if (props.layerPath) verifyLayer(dir, props.clusterId, props.caCertificatePem);
    this.layer = new LayerVersion(this, 'Layer', {
      code: Code.fromAsset(dir),
      compatibleRuntimes: [LAMBDA_RUNTIME],
      compatibleArchitectures: [ARCHITECTURE],
      description: this.isPlaceholder
        ? 'PLACEHOLDER - not a CloudHSM layer; this stack must not be deployed'
        : 'CloudHSM Client SDK 5 PKCS#11 library, cluster configuration and pkcs11js',
    });
    if (this.isPlaceholder) refuseDeployment(this);
  }
}

/**
 * A template built with the placeholder can be synthesized (CI, tests) but never deployed: this
 * CloudFormation rule fails the change set before any resource is touched, whoever runs the deploy.
 */
function refuseDeployment(scope: Construct): void {
  Annotations.of(scope).addWarningV2(
    'signing-pipeline:placeholder-layer',
    'The CloudHSM layer is a placeholder: build it with layers/cloudhsm/build.sh and pass -c cloudHsmLayerPath=<dir>',
  );
  const stack = Stack.of(scope);
  const marker = new CfnParameter(stack, 'PlaceholderLayerInUse', {
    type: 'String',
    default: 'true',
    allowedValues: ['true'],
    description: 'Set by the app when the CloudHSM layer is a placeholder; cannot be overridden.',
  });
  new CfnRule(stack, 'RefusePlaceholderLayer', {
    assertions: [
      {
        assert: Fn.conditionEquals(marker.valueAsString, 'false'),
        assertDescription:
          'This template was synthesized with the placeholder CloudHSM layer (and possibly placeholder cluster ' +
          'values). Build the layer with layers/cloudhsm/build.sh and synthesize with -c cloudHsmLayerPath=<dir>.',
      },
    ],
  });
}

export function verifyLayer(dir: string, clusterId: string, caCertificatePem?: string): LayerManifest {
  const manifestPath = join(dir, LAYER_MANIFEST_FILE);
  let manifest: LayerManifest;
  try {
    manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as LayerManifest;
  } catch {
    throw new LayerManifestError(
      `${manifestPath} is missing or not JSON: build the layer with layers/cloudhsm/build.sh`,
    );
  }
  const expectedPkcs11js = pinnedPkcs11jsVersion();
  const checks: [boolean, string][] = [
    [manifest.kind === 'cloudhsm-pkcs11-layer', 'kind is not cloudhsm-pkcs11-layer'],
    [
      manifest.architecture === LAYER_ARCHITECTURE,
      `architecture ${manifest.architecture} is not ${LAYER_ARCHITECTURE}`,
    ],
    [
      manifest.nodeMajor === NODE_MAJOR,
      `pkcs11js was built for Node.js ${manifest.nodeMajor}, not ${NODE_MAJOR}`,
    ],
    [
      manifest.pkcs11jsVersion === expectedPkcs11js,
      `pkcs11js ${manifest.pkcs11jsVersion} is not the pinned ${expectedPkcs11js}`,
    ],
    [manifest.clusterId === clusterId, `the layer is configured for ${manifest.clusterId}, not ${clusterId}`],
  ];
  if (caCertificatePem) {
    checks.push([
      manifest.hsmCaCertSha256 === certificateSha256(caCertificatePem),
      'the layer trusts a different cluster CA certificate than hsmCaCertPath',
    ]);
  }
  for (const file of REQUIRED_FILES) checks.push([existsSync(join(dir, file)), `${file} is missing`]);
  const failed = checks.filter(([ok]) => !ok).map(([, message]) => message);
  if (failed.length > 0) throw new LayerManifestError(`CloudHSM layer ${dir}: ${failed.join('; ')}`);
  return manifest;
}

/** SHA-256 of the certificate's DER, so PEM line endings and wrapping do not matter. */
export function certificateSha256(pem: string): string {
  const body = pem.replace(/-----(BEGIN|END) CERTIFICATE-----/g, '').replace(/\s+/g, '');
  return createHash('sha256').update(Buffer.from(body, 'base64')).digest('hex');
}

function pinnedPkcs11jsVersion(): string {
  const pkg = JSON.parse(readFileSync(resolve(__dirname, '../../../package.json'), 'utf8')) as {
    dependencies: Record<string, string>;
  };
  return pkg.dependencies.pkcs11js;
}
