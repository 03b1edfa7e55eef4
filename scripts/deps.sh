#!/usr/bin/env bash
# Installs the Debian packages Glove needs to build, test and benchmark.
# Idempotent and non-interactive: packages already present are left alone,
# and apt-get runs only when something is missing.
set -euo pipefail

packages=(
  build-essential pkg-config meson ninja-build clang libclang-rt-dev
  libseccomp-dev libjansson-dev libssl-dev libsystemd-dev libcmocka-dev
  bats bubblewrap hyperfine strace util-linux bsdutils procps curl e2fsprogs
  python3 nodejs npm scdoc bash-completion zsh openssl jq parallel
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

# Node and npm may come from outside Debian (a preinstalled toolchain); accept
# working binaries in place of the Debian packages.
filtered=()
for p in "${missing[@]}"; do
  case "$p" in
    nodejs) command -v node >/dev/null 2>&1 && continue ;;
    npm) command -v npm >/dev/null 2>&1 && continue ;;
  esac
  filtered+=("$p")
done

if [ "${#filtered[@]}" -gt 0 ]; then
  echo "deps.sh: installing ${filtered[*]}" >&2
  if [ "$(id -u)" -ne 0 ]; then
    echo "deps.sh: missing packages and not root; install them: apt-get install ${filtered[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${filtered[@]}" >/dev/null
fi

# npm packages for tests (real MCP servers and clients), pinned by the lockfile.
if [ -f "$(dirname "$0")/../tests/package-lock.json" ]; then
  tdir="$(cd "$(dirname "$0")/../tests" && pwd)"
  if [ ! -d "$tdir/node_modules" ] || [ "$tdir/package-lock.json" -nt "$tdir/node_modules/.package-lock.json" ]; then
    echo "deps.sh: installing npm test packages from the lockfile" >&2
    (cd "$tdir" && npm ci --prefer-offline --no-audit --no-fund --loglevel=error)
  fi
fi
