#!/usr/bin/env bash
# One-command set-up shared by `npm start`, `npm test` and `npm run bench` (their `pre` scripts).
# Idempotent and quick when everything is already in place. Steps:
#   1. Debian packages (softhsm2, opensc, a JRE, maven, openssl, xmlsec1 and xmllint, PHP and SimpleSAMLphp;
#      with --browser, as `npm test` asks, also chromium for the browser test): apt-get as root, else the
#      exact command.
#   2. npm dependencies (npm ci, npm itself on the project's own Node.js), and pkcs11js built for it.
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
# XML signatures and schemas are judged by tools nobody here wrote: xmlsec1 (verify) and xmllint (XSD).
command -v xmlsec1 >/dev/null || missing+=(xmlsec1)
command -v xmllint >/dev/null || missing+=(libxml2-utils)
# The SAML login is also tried against an identity provider nobody here wrote: Debian's SimpleSAMLphp,
# run by PHP's own web server (scripts/local/simplesamlphp); it needs PHP's DOM and mbstring extensions.
command -v php >/dev/null || missing+=(php-cli)
command -v php >/dev/null && php -r 'exit(class_exists("DOMDocument") ? 0 : 1);' 2>/dev/null || missing+=(php-xml)
command -v php >/dev/null && php -r 'exit(function_exists("mb_strlen") ? 0 : 1);' 2>/dev/null || missing+=(php-mbstring)
[ -d /usr/share/simplesamlphp/www ] || missing+=(simplesamlphp)
# The browser test drives Debian's Chromium through puppeteer-core (whose own browser download cannot work
# here); only `npm test` asks for it.
if [ "${1:-}" = "--browser" ]; then
  [ -x "${CHROMIUM_PATH:-/usr/bin/chromium}" ] || missing+=(chromium)
fi
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
    log "installing Debian packages: ${missing[*]}"
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    die "missing Debian packages: ${missing[*]}. Install them with: sudo apt-get update && sudo apt-get install -y ${missing[*]}"
  fi
fi

# --- 2. Node.js and npm dependencies ----------------------------------------------------------------
# Everything runs on the Node.js pinned as the devDependency "node" (the binary from the npm registry):
# npm scripts put node_modules/.bin first on PATH. The machine's Node.js only runs npm to install that
# one (below), and must be one npm runs on (engines.node in package.json).
floor="$(sed -n 's/^ *"node": ">=\([0-9.]*\)".*/\1/p' package.json)"
[ -n "$floor" ] || die 'package.json must name the oldest installing Node.js as engines.node ">=x.y.z"'
machine_path="$(printf '%s' "$PATH" | tr ':' '\n' | grep -v '/node_modules/\.bin$' | paste -sd: -)"
for tool in node npm; do
  PATH="$machine_path" command -v "$tool" >/dev/null \
    || die "$tool is not on PATH: installing needs Node.js $floor or newer with npm (the project then runs on its own Node.js)"
done
read -r machine_version pinned platform < <(PATH="$machine_path" node -p \
  'process.versions.node + " " + require("./package.json").devDependencies.node + " " + process.platform + "-" + process.arch')
[ "$(printf '%s\n' "$floor" "$machine_version" | sort -V | head -n1)" = "$floor" ] \
  || die "Node.js $machine_version is too old to install the project's own Node.js $pinned: install Node.js $floor or newer with npm"
# node-gyp would otherwise take the headers of the machine's Node.js (or of ~/.npmrc's nodedir); the
# platform package that brings the pinned binary ships its headers too.
node_home="$ROOT/node_modules/node/node_modules/node-$platform"

# pkcs11js is a Node-API addon: it loads in other Node.js versions too, so compare the headers it was
# built against with the pinned Node.js, not only whether it loads.
pkcs11js_built_for_pinned() {
  node_modules/.bin/node -e '
    const gypi = require("fs").readFileSync("node_modules/pkcs11js/build/config.gypi", "utf8");
    if (/"node_module_version": (\d+)/.exec(gypi)?.[1] !== process.versions.modules) process.exit(1);
    require("pkcs11js");' 2>/dev/null
}

# npm itself runs on the pinned Node.js too (scripts/npm-pinned.sh installs it into .local/node first),
# so dependencies that ask for a newer Node.js than the machine's install without EBADENGINE.
npm_on_pinned() { npm_config_nodedir="$node_home" bash scripts/npm-pinned.sh "$@"; }

if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ] \
  || [ "$(node_modules/.bin/node --version 2>/dev/null)" != "v$pinned" ]; then
  log "installing npm dependencies (npm ci) and Node.js $pinned"
  npm_on_pinned ci --no-audit --no-fund >&2
fi
[ -f "$node_home/include/node/node_api.h" ] || die "the node package brought no headers in $node_home"
if ! pkcs11js_built_for_pinned; then
  log "building pkcs11js for Node.js $pinned"
  npm_on_pinned rebuild pkcs11js >&2
  pkcs11js_built_for_pinned || die "pkcs11js does not load in Node.js $pinned after a rebuild (see the output above)"
fi
export PATH="$ROOT/node_modules/.bin:$PATH"

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
