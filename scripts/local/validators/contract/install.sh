#!/usr/bin/env bash
# Installs schemathesis, a property-based contract fuzzer for OpenAPI documents, from PyPI into a private
# venv in .local/validators/contract (git-ignored), pinned with every dependency in
# schemathesis-requirements.txt beside this script. Used by scripts/local/runner/tests/schemathesis.e2e.test.ts,
# which runs `.local/validators/contract/venv/bin/st run` against the running local API.
#
# Idempotent and quick when done (a stamp of the requirements' hash); safe to run from several processes at
# once (flock). As root with apt-get, a missing python3-venv is installed; otherwise the script stops and
# prints the exact command to run.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../../../.." && pwd)"
DEST="${CONTRACT_FUZZER_HOME:-$ROOT/.local/validators/contract}"
REQUIREMENTS="$HERE/schemathesis-requirements.txt"
VERSION="$(sed -n 's/^schemathesis==\([^ ]*\).*/\1/p' "$REQUIREMENTS")"

log() { printf '[schemathesis] %s\n' "$*" >&2; }
die() { printf '[schemathesis] ERROR: %s\n' "$*" >&2; exit 1; }
# shellcheck source=../python-venv.sh
source "$HERE/../python-venv.sh"

[ -n "$VERSION" ] || die "no schemathesis==<version> line in $REQUIREMENTS"
mkdir -p "$DEST"
exec 9>"$DEST/.install.lock"
flock 9

venv="$DEST/venv"
stamp="schemathesis $VERSION $(sha256sum "$REQUIREMENTS" | cut -d' ' -f1)"
if [ -f "$venv/.stamp" ] && [ "$(cat "$venv/.stamp")" = "$stamp" ] && [ -x "$venv/bin/st" ] \
  && [ -x "$(readlink -f "$venv/bin/python3")" ]; then
  exit 0
fi

require_python_venv "schemathesis $VERSION"

t0=$SECONDS
log "installing schemathesis $VERSION from PyPI into a private venv (schemathesis-requirements.txt)"
pip_install_venv "$venv" "$REQUIREMENTS" "schemathesis $VERSION"
"$venv/bin/st" --version >/dev/null 2>"$DEST/selftest.log" \
  || { cat "$DEST/selftest.log" >&2; rm -rf "$venv"; die "schemathesis does not start (output above); nothing installed"; }
echo "$stamp" >"$venv/.stamp"
log "schemathesis $VERSION installed in $((SECONDS - t0)) s: $venv/bin/st"
