#!/usr/bin/env bash
# Sourced by the validator installers that put a PyPI tool in a private venv (contract/install.sh,
# pki/install.sh): the python3-venv prerequisite and the pip install into a venv, one copy for both.
# The caller defines log and die (they carry its prefix) and sets DEST, its git-ignored install folder.

# require_python_venv TOOL: python3 with its venv and ensurepip modules. As root with apt-get, a missing
# python3-venv is installed; otherwise stops and prints the exact command to run.
require_python_venv() {
  command -v python3 >/dev/null || die "python3 not found: $1 needs Python 3.9 or newer" \
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
}

# pip_install_venv VENV REQUIREMENTS TOOL: a fresh venv at VENV with every pinned package of REQUIREMENTS
# from PyPI (pip's output in $DEST/pip.log, printed on failure). Built in place (a venv's scripts name
# their interpreter by absolute path); the caller's stamp, written last, is what marks it complete.
pip_install_venv() {
  local venv="$1" requirements="$2" tool="$3" index
  rm -rf "$venv"
  python3 -m venv "$venv" || die "python3 -m venv failed (is python3-venv installed?)"
  if ! "$venv/bin/pip" install -q --disable-pip-version-check --timeout 30 --retries 2 \
    -r "$requirements" >"$DEST/pip.log" 2>&1; then
    cat "$DEST/pip.log" >&2
    index="$("$venv/bin/pip" config list 2>/dev/null | sed -n "s/.*index-url='\(.*\)'/\1/p" | head -1)"
    rm -rf "$venv"
    die "pip could not install $tool from PyPI (pip's output above; is the registry" \
      "reachable? index: ${PIP_INDEX_URL:-${index:-the pip default}})"
  fi
}
