#!/usr/bin/env bash
# Unpacks the XML schemas of pom.xml (Maven Central) into .local/validators/xsd (git-ignored), flat, once:
# a stamp (the pom's hash) skips the work when nothing changed. Safe to run from several processes (flock).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../../../.." && pwd)"
DEST="$ROOT/.local/validators/xsd"

die() { printf '[xsd] ERROR: %s\n' "$*" >&2; exit 1; }

mkdir -p "$DEST"
exec 9>"$DEST/.install.lock"
flock 9
want="$(sha256sum "$HERE/pom.xml" | cut -d' ' -f1)"
[ -f "$DEST/.stamp" ] && [ "$(cat "$DEST/.stamp")" = "$want" ] && exit 0
command -v mvn >/dev/null || die "maven is missing (apt-get install maven)"
command -v unzip >/dev/null || die "unzip is missing (apt-get install unzip)"
tmp="$DEST/jars.tmp"
rm -rf "$tmp" && mkdir -p "$tmp"
mvn -q -B -Dstyle.color=never -f "$HERE/pom.xml" dependency:copy-dependencies -DexcludeTransitive=true \
  -DoutputDirectory="$tmp" >"$DEST/mvn.log" 2>&1 \
  || { cat "$DEST/mvn.log" >&2; die "could not fetch the schema packages from Maven Central"; }
for jar in "$tmp"/*.jar; do unzip -q -o -j "$jar" '*.xsd' -d "$DEST" 2>/dev/null || true; done
rm -rf "$tmp"
for f in EidCentralSigDssExt-1.1.2.xsd oasis-dss-core-schema-v1.0-os.xsd saml-schema-assertion-2.0.xsd \
  xmldsig-core-schema.xsd xenc-schema.xsd XAdES01903v132-201601.xsd EidCsigSAP-1.1.xsd; do
  [ -f "$DEST/$f" ] || die "the schema packages brought no $f"
done
printf '%s' "$want" >"$DEST/.stamp"
