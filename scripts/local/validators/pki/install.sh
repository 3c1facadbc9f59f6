#!/usr/bin/env bash
# Installs two independent certificate linters of the CA world into .local/validators/pki (git-ignored),
# used by lambdas/test-support/pki-lint.ts:
#
#   pkilint  DigiCert's pkilint from PyPI (pkilint-requirements.txt beside this script, every version
#            pinned) in a private venv. Commands: .local/validators/pki/bin/lint_pkix_cert, lint_etsi_cert,
#            lint_pkix_signer_signee_cert_chain, lint_crl, lint_ocsp_response, ...
#   zlint    ZMap's zlint command line from the Go module proxy, built with `go install` from the pinning
#            module in zlint/ beside this script (go.mod + go.sum; GOPATH and GOCACHE under
#            .local/validators/pki/go). Command: .local/validators/pki/bin/zlint
#
# Idempotent and quick when done: each component has a stamp (its pinned versions and a hash of the files
# that pin them) and is skipped when it matches, so a second run takes milliseconds. Safe to run from
# several processes at once (flock).
#
# Usage: install.sh [pkilint|zlint|all]   (default: all)
# As root with apt-get, a missing python3-venv is installed; otherwise the script stops and prints the exact
# command to run. Go (1.25 or newer) must be on PATH: Debian's golang-go is too old on bookworm.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../../../.." && pwd)"
DEST="${PKI_LINT_HOME:-$ROOT/.local/validators/pki}"
WHAT="${1:-all}"

PKILINT_VERSION="$(sed -n 's/^pkilint==\([^ ]*\).*/\1/p' "$HERE/pkilint-requirements.txt")"
ZLINT_VERSION="$(sed -n 's/^require github.com\/zmap\/zlint\/v3 \(v[^ ]*\).*/\1/p' "$HERE/zlint/go.mod")"
GO_MIN_MINOR=25 # zlint's go.mod says go 1.25.0

log() { printf '[pki-lint] %s\n' "$*" >&2; }
die() { printf '[pki-lint] ERROR: %s\n' "$*" >&2; exit 1; }
# shellcheck source=../python-venv.sh
source "$HERE/../python-venv.sh"

case "$WHAT" in pkilint | zlint | all) ;; *) die "unknown component '$WHAT' (use pkilint, zlint or all)" ;; esac
[ -n "$PKILINT_VERSION" ] || die "no pkilint==<version> line in $HERE/pkilint-requirements.txt"
[ -n "$ZLINT_VERSION" ] || die "no zlint requirement in $HERE/zlint/go.mod"
want_pkilint=true; want_zlint=true
[ "$WHAT" = zlint ] && want_pkilint=false
[ "$WHAT" = pkilint ] && want_zlint=false

mkdir -p "$DEST"
exec 9>"$DEST/.install.lock"
flock 9

# --- what is already in place (no Python or Go started) ----------------------------------------------
pkilint_stamp() {
  printf 'pkilint %s %s\n' "$PKILINT_VERSION" "$(sha256sum "$HERE/pkilint-requirements.txt" | cut -d' ' -f1)"
}
pkilint_current() {
  [ -f "$DEST/venv/.stamp" ] && [ "$(cat "$DEST/venv/.stamp")" = "$(pkilint_stamp)" ] \
    && [ -x "$DEST/venv/bin/lint_etsi_cert" ] && [ -x "$(readlink -f "$DEST/venv/bin/python3")" ]
}
zlint_stamp() {
  printf 'zlint %s %s\n' "$ZLINT_VERSION" "$(cat "$HERE/zlint/go.mod" "$HERE/zlint/go.sum" | sha256sum | cut -d' ' -f1)"
}
zlint_current() {
  [ -f "$DEST/bin/.zlint.stamp" ] && [ "$(cat "$DEST/bin/.zlint.stamp")" = "$(zlint_stamp)" ] \
    && [ -x "$DEST/bin/zlint" ]
}
if $want_pkilint && pkilint_current; then want_pkilint=false; fi
if $want_zlint && zlint_current; then want_zlint=false; fi
$want_pkilint || $want_zlint || exit 0

# --- prerequisites ----------------------------------------------------------------------------------
if $want_pkilint; then
  require_python_venv "pkilint $PKILINT_VERSION"
fi
if $want_zlint; then
  command -v go >/dev/null || die "go not found on PATH: zlint $ZLINT_VERSION is built from the Go module proxy" \
    "and needs Go 1.$GO_MIN_MINOR or newer (https://go.dev/dl; Debian's golang-go may be too old)"
  go_version="$(go env GOVERSION 2>/dev/null || true)" # go1.26.8
  go_minor="$(printf '%s' "$go_version" | sed -n 's/^go1\.\([0-9]*\).*/\1/p')"
  [ -n "$go_minor" ] && [ "$go_minor" -ge "$GO_MIN_MINOR" ] \
    || die "${go_version:-an unknown Go} found; zlint $ZLINT_VERSION needs Go 1.$GO_MIN_MINOR or newer"
fi

# --- pkilint -----------------------------------------------------------------------------------------
install_pkilint() {
  local t0=$SECONDS venv="$DEST/venv"
  log "installing pkilint $PKILINT_VERSION from PyPI into a private venv (pkilint-requirements.txt)"
  pip_install_venv "$venv" "$HERE/pkilint-requirements.txt" "pkilint $PKILINT_VERSION"
  "$venv/bin/lint_pkix_cert" validations >/dev/null 2>"$DEST/pkilint-selftest.log" \
    || { cat "$DEST/pkilint-selftest.log" >&2; rm -rf "$venv"; die "pkilint does not start (output above); nothing installed"; }
  pkilint_stamp >"$venv/.stamp"
  log "pkilint $PKILINT_VERSION installed in $((SECONDS - t0)) s: $venv/bin"
}

# --- zlint -------------------------------------------------------------------------------------------
install_zlint() {
  local t0=$SECONDS
  log "building zlint $ZLINT_VERSION from the Go module proxy (scripts/local/validators/pki/zlint/go.mod)"
  mkdir -p "$DEST/bin" "$DEST/go"
  rm -f "$DEST/bin/.zlint.stamp"
  # The module pins everything (go.sum checked, nothing rewritten); Go's own toolchain switching is off
  # so nothing but modules is downloaded.
  (
    cd "$HERE/zlint"
    GOPATH="$DEST/go" GOMODCACHE="$DEST/go/pkg/mod" GOCACHE="$DEST/go/cache" GOBIN="$DEST/bin" \
      GOTOOLCHAIN=local GOWORK=off GOFLAGS="-mod=readonly -modcacherw -buildvcs=false" CGO_ENABLED=0 \
      go install -trimpath -ldflags "-s -w -X main.version=$ZLINT_VERSION" github.com/zmap/zlint/v3/cmd/zlint
  ) >"$DEST/go.log" 2>&1 \
    || { cat "$DEST/go.log" >&2
         die "could not build zlint $ZLINT_VERSION (go's output above; is the Go module proxy reachable? GOPROXY=$(go env GOPROXY))"; }
  "$DEST/bin/zlint" -version >/dev/null 2>&1 || die "the zlint just built does not start"
  rm -rf "$DEST/go/cache" # the build cache (~120 MB) only speeds up a rebuild; the module cache stays
  zlint_stamp >"$DEST/bin/.zlint.stamp"
  log "zlint $ZLINT_VERSION installed in $((SECONDS - t0)) s: $DEST/bin/zlint"
}

$want_pkilint && install_pkilint
$want_zlint && install_zlint
mkdir -p "$DEST/bin"
for cmd in lint_pkix_cert lint_pkix_signer_signee_cert_chain lint_etsi_cert lint_crl lint_ocsp_response \
  lint_cabf_smime_cert; do
  [ -x "$DEST/venv/bin/$cmd" ] && ln -sfn "$DEST/venv/bin/$cmd" "$DEST/bin/$cmd"
done
exit 0
