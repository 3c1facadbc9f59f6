#!/usr/bin/env bash
# Installs the CloudFormation linters AWS's own tooling would run into .local/validators/cfn (git-ignored):
# cfn-lint and checkov from PyPI (requirements.txt beside this script, pinned) in a private venv.
# Idempotent: a stamp (the requirements' hash) skips a current install. Safe to run concurrently (flock).
# As root with apt-get, a missing python3-venv is installed; otherwise the script prints the command.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
DEST="${CFN_LINT_HOME:-$ROOT/.local/validators/cfn}"

log() { printf '[infra-lint] %s\n' "$*" >&2; }
die() { printf '[infra-lint] ERROR: %s\n' "$*" >&2; exit 1; }
# shellcheck source=../local/validators/python-venv.sh
source "$ROOT/scripts/local/validators/python-venv.sh"

stamp() { printf 'cfn %s\n' "$(sha256sum "$HERE/requirements.txt" | cut -d' ' -f1)"; }

mkdir -p "$DEST"
exec 9>"$DEST/.install.lock"
flock 9
if [ -f "$DEST/venv/.stamp" ] && [ "$(cat "$DEST/venv/.stamp")" = "$(stamp)" ] \
  && [ -x "$DEST/venv/bin/cfn-lint" ] && [ -x "$DEST/venv/bin/checkov" ]; then
  exit 0
fi
require_python_venv "cfn-lint and checkov"
t0=$SECONDS
log "installing cfn-lint and checkov from PyPI into a private venv (requirements.txt)"
pip_install_venv "$DEST/venv" "$HERE/requirements.txt" "cfn-lint and checkov"
"$DEST/venv/bin/cfn-lint" --version >/dev/null || die "cfn-lint does not start"
"$DEST/venv/bin/checkov" --version >/dev/null || die "checkov does not start"
stamp >"$DEST/venv/.stamp"
log "installed in $((SECONDS - t0)) s: $DEST/venv/bin"
