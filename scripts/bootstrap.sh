#!/usr/bin/env bash
# One-command set-up shared by `npm start`, `npm test` and `npm run bench` (their `pre` scripts).
# Idempotent and quick when everything is already in place. Steps:
#   1. Debian packages (softhsm2, opensc, a JRE, maven, openssl): apt-get as root, else the exact command.
#   2. npm dependencies (npm ci) when node_modules is missing or older than package-lock.json.
#   3. DynamoDB Local and ElasticMQ jars from Maven Central into .local/jars (once).
#   4. A SoftHSM token in .local/softhsm with its own SOFTHSM2_CONF, and the long-lived token objects.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LOCAL="$ROOT/.local"
cd "$ROOT"

log() { printf '[bootstrap] %s\n' "$*" >&2; }
die() { printf '[bootstrap] ERROR: %s\n' "$*" >&2; exit 1; }

# --- 1. Debian packages -------------------------------------------------------------------------
missing=()
[ -e /usr/lib/softhsm/libsofthsm2.so ] && command -v softhsm2-util >/dev/null || missing+=(softhsm2)
command -v pkcs11-tool >/dev/null || missing+=(opensc)
# A JDK, not only a JRE: DynamoDB Local starts through a single-file Java launcher (it binds loopback).
command -v java >/dev/null && command -v javac >/dev/null || missing+=(default-jdk-headless)
command -v mvn >/dev/null || missing+=(maven)
command -v openssl >/dev/null || missing+=(openssl)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
    log "installing Debian packages: ${missing[*]}"
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    die "missing Debian packages: ${missing[*]}. Install them with: sudo apt-get update && sudo apt-get install -y ${missing[*]}"
  fi
fi

# --- 2. npm dependencies --------------------------------------------------------------------------
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ] \
  || [ ! -f node_modules/pkcs11js/build/Release/pkcs11.node ]; then
  log "installing npm dependencies (npm ci)"
  npm ci --no-audit --no-fund >&2
fi

# --- 3. Stand-in jars from Maven Central -----------------------------------------------------------
for standin in dynamodb-local elasticmq; do
  dest="$LOCAL/jars/$standin"
  pom="scripts/local/maven/$standin/pom.xml"
  stamp="$dest/.pom.sha256"
  want="$(sha256sum "$pom" | cut -d' ' -f1)"
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    log "fetching $standin from Maven Central"
    rm -rf "$dest"
    mkdir -p "$dest"
    mvn -q -B -Dstyle.color=never -f "$pom" dependency:copy-dependencies -DoutputDirectory="$dest" >&2 \
      || die "could not fetch $standin from Maven Central (see the Maven output above)"
    echo "$want" >"$stamp"
  fi
done

# --- 4. SoftHSM token and its long-lived objects ---------------------------------------------------
# Everything about the token (directory, label, PINs) is decided in one TypeScript module
# (scripts/local/token.ts); it uses softhsm2-util to create the token and the HSM adapter for objects.
node_modules/.bin/tsx scripts/local/setup-token.ts
