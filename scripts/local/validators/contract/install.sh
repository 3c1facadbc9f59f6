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

command -v python3 >/dev/null || die "python3 not found: schemathesis $VERSION needs Python 3.9 or newer" \
  "(e.g. sudo apt-get install -y python3 python3-venv)"
if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
    log "installing the Debian package python3-venv"
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null \
      || die "apt-get could not install python3-venv"
  else
    die "python3 has no venv/ensurepip module (python3-venv missing)." \
      "Install it with: sudo apt-get update && sudo apt-get install -y python3-venv"
  fi
fi

t0=$SECONDS
log "installing schemathesis $VERSION from PyPI into a private venv (schemathesis-requirements.txt)"
# Built in place (a venv's scripts name their interpreter by absolute path); the stamp, written last, is
# what marks it complete.
rm -rf "$venv"
python3 -m venv "$venv" || die "python3 -m venv failed (is python3-venv installed?)"
if ! "$venv/bin/pip" install -q --disable-pip-version-check --timeout 30 --retries 2 \
  -r "$REQUIREMENTS" >"$DEST/pip.log" 2>&1; then
  cat "$DEST/pip.log" >&2
  index="$("$venv/bin/pip" config list 2>/dev/null | sed -n "s/.*index-url='\(.*\)'/\1/p" | head -1)"
  rm -rf "$venv"
  die "pip could not install schemathesis $VERSION from PyPI (pip's output above; is the registry" \
    "reachable? index: ${PIP_INDEX_URL:-${index:-the pip default}})"
fi
"$venv/bin/st" --version >/dev/null 2>"$DEST/selftest.log" \
  || { cat "$DEST/selftest.log" >&2; rm -rf "$venv"; die "schemathesis does not start (output above); nothing installed"; }
echo "$stamp" >"$venv/.stamp"
log "schemathesis $VERSION installed in $((SECONDS - t0)) s: $venv/bin/st"
