#!/usr/bin/env bash
# tools/setup.sh - install what det needs on a Debian machine, then create
# .venv with det and its Python tools. Idempotent; make runs it once.
#
#   tools/setup.sh             what building and `make test` need
#   tools/setup.sh --package   also what `make package-check` needs (Debian
#                              packaging tools, debootstrap); no .venv
#
# Rules: Debian packages are installed only when running as root (apt-get);
# otherwise each missing tool is named with the package that provides it,
# and the script fails.
set -euo pipefail
cd "$(dirname "$0")/.."

# command -> Debian package
need=(
  "gcc:gcc" "g++:g++" "make:make" "gdb:gdb" "addr2line:binutils"
  "tmux:tmux" "sqlite3:sqlite3" "pigz:pigz" "pbzip2:pbzip2" "xz:xz-utils" "curl:curl" "openssl:openssl"
  "man:man-db" "bash:bash" "setpriv:util-linux" "setcap:libcap2-bin"
  "cmake:cmake" "autoconf:autoconf" "automake:automake"
  # tests/e2e/test_servers.py: real servers under a bounded load
  "nginx:nginx" "memcached:memcached" "ab:apache2-utils"
  # tests/dap (Microsoft's DAP client) and make vsix: Node.js and npm
  "node:nodejs" "npm:npm"
  # make check-kmod: Debian's kernel booted in qemu with a busybox guest
  "qemu-system-x86_64:qemu-system-x86" "busybox:busybox-static" "python3.11:python3.11" "dpkg-deb:dpkg"
  # tests/e2e/test_ptrace.py: a Go program recorded with detrec --ptrace
  "go:golang-go"
)
package=0
if [ "${1:-}" = --package ]; then
  package=1
  need+=("dpkg-buildpackage:dpkg-dev" "dh:debhelper" "dh_python3:dh-python" "lintian:lintian" "debootstrap:debootstrap")
fi
# file -> Debian package. det-cc (llvm/) builds its pass plugin against
# LLVM 22, the newest LLVM Debian 12 packages (bookworm-security carries
# 22.1; bookworm itself 13-16 and 19): a plugin loads only into the clang
# it was built for, so clang, its headers and FileCheck (the pass's lit
# tests) come in one version.
headers=(
  "/usr/include/sqlite3.h:libsqlite3-dev"
  "/usr/lib/llvm-22/bin/clang:clang-22"
  "/usr/lib/llvm-22/bin/llvm-config:llvm-22-dev"
  "/usr/lib/llvm-22/bin/FileCheck:llvm-22-tools"
  # det names source lines with LLVM's addr2line (store/det/symbols.py)
  "/usr/lib/llvm-22/bin/llvm-addr2line:llvm-22"
)

missing=()
for pair in "${need[@]}"; do
  cmd=${pair%%:*}; pkg=${pair##*:}
  command -v "$cmd" >/dev/null 2>&1 || [ -x "/usr/sbin/$cmd" ] || missing+=("$pkg")
done
for pair in "${headers[@]}"; do
  f=${pair%%:*}; pkg=${pair##*:}
  [ -e "$f" ] || missing+=("$pkg")
done
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3 || true)
if [ -z "$PY" ]; then
  missing+=("python3")
elif ! "$PY" -c 'import ensurepip, venv' >/dev/null 2>&1; then
  missing+=("python3-venv")
fi

if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "setup: installing ${missing[*]}"
    apt-get -o DPkg::Lock::Timeout=900 update -qq
    # the servers the tests run are installed, not started as services
    # (invoke-rc.d asks policy-rc.d; 101: action forbidden)
    policy=/usr/sbin/policy-rc.d
    own_policy=0
    if [ ! -e "$policy" ]; then
      printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod 755 "$policy" && own_policy=1
      trap 'rm -f /usr/sbin/policy-rc.d' EXIT
    fi
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    if [ "$own_policy" = 1 ]; then rm -f "$policy"; trap - EXIT; fi
    PY=/usr/bin/python3
  else
    echo "setup: missing Debian packages: ${missing[*]} (run as root, or: sudo apt-get install ${missing[*]})" >&2
    exit 1
  fi
fi

[ "$package" = 1 ] && exit 0

if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
.venv/bin/python -m pip install -q -e '.[dev,tui,dap]'
touch .venv/.det-setup
