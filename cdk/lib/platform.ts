import { Architecture, Runtime } from 'aws-cdk-lib/aws-lambda';

/**
 * The one place that fixes the Lambda platform: every function and the CloudHSM layer share it, because
 * the layer carries native code (libcloudhsm_pkcs11.so, pkcs11js's addon) built for one architecture.
 *
 * x86_64 rather than arm64: both CloudHSM SDK 5 packages exist for Amazon Linux 2023, but the native layer
 * must be built on a host of the same architecture, and common CI runners and build hosts are x86_64, so
 * the layer builds there without emulation. arm64 would save about 20 % of compute cost; switching means
 * changing ARCHITECTURE here and ARCH in layers/cloudhsm/build.sh together (the layer manifest check
 * refuses a mismatch).
 */
export const LAMBDA_RUNTIME = Runtime.NODEJS_24_X;
/** Also the major of the Node.js the project runs on locally (the devDependency `node`). */
export const NODE_MAJOR = 24;
export const ARCHITECTURE = Architecture.X86_64;
/** `uname -m` name of ARCHITECTURE, as the layer build writes it into its manifest. */
export const LAYER_ARCHITECTURE = 'x86_64';

/** Where the layer puts the PKCS#11 module (layers mount at /opt; SDK 5 installs to /opt/cloudhsm). */
export const CLOUDHSM_MODULE_PATH = '/opt/cloudhsm/lib/libcloudhsm_pkcs11.so';
