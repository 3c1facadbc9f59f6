#!/usr/bin/env bash
# Builds the CloudHSM Lambda layer: the Client SDK 5 PKCS#11 library with this cluster's configuration
# baked in (a layer's /opt is read-only at run time), plus pkcs11js compiled for the Lambda runtime.
#
# Run it on a disposable Amazon Linux 2023 build host of the Lambda architecture (x86_64), as root, with
# Node.js 24 and network access, e.g. inside `public.ecr.aws/lambda/nodejs:24` or a CodeBuild AL2023
# image. It installs the CloudHSM RPM into that host's /opt/cloudhsm. Never run by tests or CI.
#
#   HSM_IPS=10.0.1.10,10.0.2.10 HSM_CLUSTER_ID=cluster-abc123 HSM_CA_CERT=customerCA.crt \
#     bash layers/cloudhsm/build.sh
#
# Output: layers/cloudhsm/build/layer/ (pass it to the CDK app as -c cloudHsmLayerPath=...) and
# layers/cloudhsm/build/layer.zip. Optional: SINGLE_HSM=1 for a one-HSM cluster (disables the key
# availability check, which needs two HSMs).
set -euo pipefail

# ---- pinned inputs: the one place to change the SDK version or architecture ------------------------
SDK_VERSION="5.16.2"
ARCH="x86_64" # must equal LAYER_ARCHITECTURE in cdk/lib/platform.ts
NODE_MAJOR="24" # must equal NODE_MAJOR in cdk/lib/platform.ts
RPM_NAME="cloudhsm-pkcs11-${SDK_VERSION}-1.amzn2023.${ARCH}.rpm"
RPM_URL="https://s3.amazonaws.com/cloudhsmv2-software/CloudHsmClient/Amzn2023/${RPM_NAME}"
# SHA-256 of that RPM as published on AWS's "Latest Client SDK releases" page (5.16.2, AL2023, x86_64
# PKCS #11 library). Verify it against the page before first use; for aarch64 it is 7556c692...29c5.
RPM_SHA256="e223649cbf689afaeca445b962cceaab3c143b901ee7974a7a5360b6424c409b"
# -----------------------------------------------------------------------------------------------------

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
OUT="$HERE/build"
LAYER="$OUT/layer"

fail() {
  echo "build.sh: $*" >&2
  exit 1
}

# ---- preconditions: say exactly what is missing ------------------------------------------------------
[[ "$RPM_SHA256" =~ ^[0-9a-f]{64}$ ]] || fail "RPM_SHA256 is not set to the published checksum of $RPM_NAME"
[[ -r /etc/os-release ]] || fail "cannot identify the OS: run on Amazon Linux 2023 (the Lambda nodejs${NODE_MAJOR}.x base)"
# shellcheck disable=SC1091
. /etc/os-release
[[ "${ID:-}" == "amzn" && "${VERSION_ID:-}" == "2023" ]] ||
  fail "this is ${PRETTY_NAME:-an unknown OS}; the layer must be built on Amazon Linux 2023, the OS of the nodejs${NODE_MAJOR}.x runtime"
[[ "$(uname -m)" == "$ARCH" ]] || fail "host is $(uname -m), the layer is for $ARCH (Lambda architecture in cdk/lib/platform.ts)"
[[ "$(id -u)" == "0" ]] || fail "run as root on a disposable build host: the RPM installs into /opt/cloudhsm"
command -v node >/dev/null || fail "Node.js ${NODE_MAJOR} is required (pkcs11js is compiled against its ABI)"
[[ "$(node -p 'process.versions.node.split(".")[0]')" == "$NODE_MAJOR" ]] ||
  fail "Node.js $(node --version) found; pkcs11js must be built with Node.js ${NODE_MAJOR}"
: "${HSM_CLUSTER_ID:?HSM_CLUSTER_ID is required (cluster-...; the same value as the CDK context hsmClusterId)}"
: "${HSM_IPS:?HSM_IPS is required: comma-separated ENI IP addresses of the cluster HSMs}"
: "${HSM_CA_CERT:?HSM_CA_CERT is required: path of the cluster CA certificate (customerCA.crt)}"
[[ "$HSM_CLUSTER_ID" =~ ^cluster-[a-z0-9]+$ ]] || fail "HSM_CLUSTER_ID must look like cluster-abc123"
[[ -r "$HSM_CA_CERT" ]] || fail "HSM_CA_CERT $HSM_CA_CERT cannot be read"
openssl x509 -in "$HSM_CA_CERT" -noout 2>/dev/null || fail "HSM_CA_CERT $HSM_CA_CERT is not a PEM certificate"
PKCS11JS_VERSION="$(node -p "require('$ROOT/package.json').dependencies.pkcs11js")"
[[ "$PKCS11JS_VERSION" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "pkcs11js must be pinned to an exact version in package.json"

# ---- tools -------------------------------------------------------------------------------------------
dnf install -y -q gcc-c++ make python3 openssl zip findutils >/dev/null ||
  fail "dnf could not install the build tools (no network or no repository access?)"

# ---- CloudHSM PKCS#11 library ------------------------------------------------------------------------
rm -rf "$OUT" && mkdir -p "$OUT" "$LAYER/cloudhsm/lib" "$LAYER/cloudhsm/etc" "$LAYER/nodejs"
curl -fsSL --retry 3 -o "$OUT/$RPM_NAME" "$RPM_URL" || fail "download of $RPM_URL failed (network? version?)"
echo "$RPM_SHA256  $OUT/$RPM_NAME" | sha256sum -c --quiet - || fail "checksum mismatch for $RPM_NAME: refusing it"
dnf install -y -q "$OUT/$RPM_NAME" >/dev/null || fail "could not install $RPM_NAME"

# The cluster configuration, written now because /opt is read-only in Lambda. Logs go to the terminal
# (stderr -> CloudWatch Logs), since the default log file under /opt/cloudhsm/run cannot be written.
cp "$HSM_CA_CERT" /opt/cloudhsm/etc/customerCA.crt
IFS=',' read -r -a IPS <<<"$HSM_IPS"
CONFIGURE=(/opt/cloudhsm/bin/configure-pkcs11 -a "${IPS[@]}" --hsm-ca-cert /opt/cloudhsm/etc/customerCA.crt
  --log-type term --log-level warn)
[[ "${SINGLE_HSM:-0}" == "1" ]] && CONFIGURE+=(--disable-key-availability-check)
"${CONFIGURE[@]}" || fail "configure-pkcs11 failed"

cp /opt/cloudhsm/lib/libcloudhsm_pkcs11.so "$LAYER/cloudhsm/lib/"
cp /opt/cloudhsm/etc/cloudhsm-pkcs11.cfg /opt/cloudhsm/etc/customerCA.crt "$LAYER/cloudhsm/etc/"
# Everything the library links against must exist in the Lambda runtime (same OS), nothing else.
if ldd "$LAYER/cloudhsm/lib/libcloudhsm_pkcs11.so" | grep -q 'not found'; then
  ldd "$LAYER/cloudhsm/lib/libcloudhsm_pkcs11.so" >&2
  fail "libcloudhsm_pkcs11.so has unresolved libraries"
fi

# ---- pkcs11js, compiled here for Node.js 24 on $ARCH ---------------------------------------------------
(cd "$LAYER/nodejs" && npm init -y >/dev/null &&
  npm install --omit=dev --no-audit --no-fund --save-exact "pkcs11js@${PKCS11JS_VERSION}" >/dev/null) ||
  fail "npm could not build pkcs11js@${PKCS11JS_VERSION}"
node -e "require('$LAYER/nodejs/node_modules/pkcs11js')" || fail "the built pkcs11js does not load"
node -e "
  const p = new (require('$LAYER/nodejs/node_modules/pkcs11js').PKCS11)();
  p.load('$LAYER/cloudhsm/lib/libcloudhsm_pkcs11.so');
  console.log('pkcs11js loaded libcloudhsm_pkcs11.so');
" || fail "pkcs11js cannot load libcloudhsm_pkcs11.so"

# ---- manifest: the CDK app checks it against the stack's settings ----------------------------------------
CA_SHA256="$(openssl x509 -in "$HSM_CA_CERT" -outform DER | sha256sum | cut -d' ' -f1)"
cat >"$LAYER/layer-manifest.json" <<JSON
{
  "kind": "cloudhsm-pkcs11-layer",
  "architecture": "$ARCH",
  "nodeMajor": $NODE_MAJOR,
  "cloudHsmSdkVersion": "$SDK_VERSION",
  "pkcs11jsVersion": "$PKCS11JS_VERSION",
  "clusterId": "$HSM_CLUSTER_ID",
  "hsmCaCertSha256": "$CA_SHA256",
  "builtAt": "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
}
JSON
(cd "$LAYER" && zip -qr "$OUT/layer.zip" .)
echo "layer: $LAYER (zip: $OUT/layer.zip)"
echo "deploy with: -c cloudHsmLayerPath=${LAYER#"$ROOT"/} -c hsmClusterId=$HSM_CLUSTER_ID -c hsmCaCertPath=<customerCA.crt> ..."
