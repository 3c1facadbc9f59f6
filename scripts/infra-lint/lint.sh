#!/usr/bin/env bash
# Lints the synthesized templates (cdk.out, from `npm run synth`: the default stack, the stack with the
# DSS-Ext door, off by default, and the PKI edge stack) as AWS's own tooling would: cfn-lint
# (0 errors, 0 warnings but W3005) and checkov (every finding fixed in cdk/ or skipped with its reason in
# .checkov.yaml). Installs both first (install.sh). Offline: checkov downloads nothing (skip-download).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
BIN="${CFN_LINT_HOME:-$ROOT/.local/validators/cfn}/venv/bin"
cd "$ROOT"
TEMPLATES=(
  cdk.out/SigningPipelineStack.template.json
  cdk.out/dssext/SigningPipelineStack.template.json
  cdk.out/pki-edge/SigningPipelinePkiEdgeStack.template.json
)
for t in "${TEMPLATES[@]}"; do
  [ -f "$t" ] || { printf '[infra-lint] ERROR: %s missing: run npm run synth first\n' "$t" >&2; exit 1; }
done
bash "$HERE/install.sh"
# W3005: CDK writes a DependsOn on each function's role that its GetAtt already implies; harmless.
"$BIN/cfn-lint" --ignore-checks W3005 -- "${TEMPLATES[@]}"
echo "[infra-lint] cfn-lint: no findings"
args=()
for t in "${TEMPLATES[@]}"; do args+=(-f "$t"); done
BC_SKIP_MAPPING=TRUE CHECKOV_RUN_SCA_PACKAGE_SCAN_V2=false \
  "$BIN/checkov" --config-file .checkov.yaml "${args[@]}"
echo "[infra-lint] checkov: no findings"
