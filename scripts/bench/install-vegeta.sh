#!/usr/bin/env bash
# Installs the load generator vegeta (github.com/tsenart/vegeta, pinned below) into .local/bin
# (git-ignored) for `npm run bench -- external` and its test: `go install` from the Go module proxy, whose
# checksum database checks the module. Quick when done: a stamp naming the version is checked first, so a
# second run takes milliseconds. Safe to run from several processes at once (flock).
# Go (1.22 or newer, as vegeta's go.mod asks) must be on PATH.
set -euo pipefail

VERSION=v12.13.0
MODULE=github.com/tsenart/vegeta/v12
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BIN="$ROOT/.local/bin"
STAMP="$BIN/.vegeta.stamp"

log() { printf '[vegeta] %s\n' "$*" >&2; }
die() { printf '[vegeta] ERROR: %s\n' "$*" >&2; exit 1; }

current() { [ -x "$BIN/vegeta" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$MODULE@$VERSION" ]; }
current && exit 0

mkdir -p "$BIN"
exec 9>"$BIN/.vegeta.lock"
flock 9
current && exit 0

command -v go >/dev/null || die "go not found on PATH: vegeta $VERSION is built from the Go module proxy" \
  "with \`go install\`. Install Go 1.22 or newer (https://go.dev/dl) and run again."

t0=$SECONDS
log "building vegeta $VERSION from the Go module proxy into $BIN"
rm -f "$STAMP"
# Go's own toolchain switching is off so that nothing but modules is downloaded.
GOBIN="$BIN" GOTOOLCHAIN=local GOFLAGS=-buildvcs=false go install "$MODULE@$VERSION" >"$BIN/.vegeta-go.log" 2>&1 \
  || { cat "$BIN/.vegeta-go.log" >&2
       die "could not build vegeta $VERSION (go's output above; is the Go module proxy reachable? GOPROXY=$(go env GOPROXY))"; }
go version -m "$BIN/vegeta" | grep -q "mod[[:space:]]*$MODULE[[:space:]]*$VERSION" \
  || die "the binary built is not $MODULE $VERSION"
printf '%s\n' "$MODULE@$VERSION" >"$STAMP"
log "vegeta $VERSION installed in $((SECONDS - t0)) s: $BIN/vegeta"
