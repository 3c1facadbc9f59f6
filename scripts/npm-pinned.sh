#!/usr/bin/env bash
# Runs npm (the machine's npm, its arguments as given) on the project's own Node.js: the version pinned as
# the devDependency "node", installed once by the machine's npm into .local/node (a package.json of its
# own there allows its install script). npm starts through `#!/usr/bin/env node`, so with that Node.js
# first on PATH every engines check and install script sees it, not the machine's: dependencies that
# need a newer Node.js than the machine's (puppeteer-core: >= 22.12) install without EBADENGINE. The
# bootstrap runs `npm ci` and `npm rebuild` through it.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
installer="$ROOT/.local/node"
machine_path="$(printf '%s' "$PATH" | tr ':' '\n' | grep -v '/node_modules/\.bin$' | paste -sd: -)"
pinned="$(cd "$ROOT" && PATH="$machine_path" node -p 'require("./package.json").devDependencies.node')"

if [ "$("$installer/node_modules/.bin/node" --version 2>/dev/null)" != "v$pinned" ]; then
  printf '[npm-pinned] installing Node.js %s for npm (into .local/node)\n' "$pinned" >&2
  rm -rf "$installer"
  mkdir -p "$installer"
  printf '{ "private": true, "allowScripts": { "node": true } }\n' >"$installer/package.json"
  PATH="$machine_path" npm install --prefix "$installer" --no-save --no-package-lock --no-audit --no-fund \
    --loglevel=error "node@$pinned" >&2
fi
cd "$ROOT"
PATH="$installer/node_modules/.bin:$machine_path" exec npm "$@"
