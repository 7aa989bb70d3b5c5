#!/bin/sh
# Installs what ecpd needs to build, test and benchmark, and nothing that is
# already there: Debian packages through apt. Safe to run again and again.
#
#   sh third_party/install-deps.sh          build + test dependencies
#   sh third_party/install-deps.sh --bench  also the benchmarks' comparators
set -eu

packages="pkg-config cmake make gcc clang libclang-rt-14-dev python3
  libjsmn-dev libgit2-dev libtree-sitter-dev libvterm-dev libsqlite3-dev
  libcurl4-openssl-dev libuv1-dev libpcre2-dev libpq-dev libcmocka-dev libsodium-dev
  git ripgrep"
if [ "${1:-}" = "--bench" ]; then
  packages="$packages neovim python3-msgpack hyperfine"
fi

missing=""
for p in $packages; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done

if [ -n "$missing" ]; then
  echo "install-deps: installing$missing"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

# The syntax service's tree-sitter grammars, from npm at pinned versions
# (not committed: see fetch-grammars.sh).
if ! command -v npm >/dev/null 2>&1; then
  echo "install-deps: installing npm"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends npm >/dev/null
fi
sh "$(dirname "$0")/fetch-grammars.sh"
