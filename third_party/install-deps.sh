#!/bin/sh
# Installs what ecpd needs to build, test and benchmark, and nothing that is
# already there: Debian packages through apt. Safe to run again and again.
#
#   sh third_party/install-deps.sh          build + test dependencies
#   sh third_party/install-deps.sh --bench  also the benchmarks' comparators
set -eu

# dpkg-dev, man-db, groff-base, strace and systemd: the install tests (the package's Depends from
# dpkg-shlibdeps, man pages rendered, files opened, socket activation).
# openssh-server: the ssh tests run a private sshd on 127.0.0.1; Debian's package also enables its own
# service on port 22 (`systemctl disable --now ssh` where this machine should not serve ssh).
packages="pkg-config cmake make gcc clang libclang-rt-14-dev python3
  libjsmn-dev libgit2-dev libvterm-dev libsqlite3-dev
  libcurl4-openssl-dev libuv1-dev libpcre2-dev libpq-dev libcmocka-dev libsodium-dev
  postgresql git ripgrep clangd libncurses-dev ncurses-term tmux libeditorconfig-dev libutf8proc-dev
  dpkg-dev man-db groff-base strace systemd openssh-client openssh-server
  libwebsockets-dev libwebsockets-evlib-uv chromium python3-websockets"
if [ "${1:-}" = "--bench" ]; then
  packages="$packages neovim python3-msgpack hyperfine valgrind"
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

# npm brings what Debian does not package: the syntax service's tree-sitter
# runtime and grammars, and the language servers the lsp service's tests talk to (clangd
# comes from Debian above), at pinned versions, into third_party/ (not
# committed). A machine without node gets Debian's (a node from elsewhere
# brings its own npm, and Debian's npm package would conflict with it).
if ! command -v npm >/dev/null 2>&1; then
  echo "install-deps: installing npm"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends npm >/dev/null
fi
sh "$(dirname "$0")/fetch-grammars.sh"
node_prefix="$(dirname "$0")/node"
if [ ! -x "$node_prefix/node_modules/.bin/pyright-langserver" ] ||
   [ ! -x "$node_prefix/node_modules/.bin/typescript-language-server" ]; then
  echo "install-deps: installing language servers into $node_prefix"
  mkdir -p "$node_prefix"
  [ -f "$node_prefix/package.json" ] || printf '{"name":"ecpd-language-servers","private":true}\n' >"$node_prefix/package.json"
  (cd "$node_prefix" && npm install --no-audit --no-fund --silent \
    typescript-language-server@5.3.0 typescript@5.9.3 pyright@1.1.414 >/dev/null)
fi
# The agent's tests: the ACP client (1.x still has ClientSideConnection) and an
# MCP server as a real tool source.
if [ ! -f "$node_prefix/node_modules/@agentclientprotocol/sdk/package.json" ] ||
   [ ! -f "$node_prefix/node_modules/@modelcontextprotocol/server-filesystem/package.json" ]; then
  echo "install-deps: installing the ACP client and an MCP server into $node_prefix"
  mkdir -p "$node_prefix"
  [ -f "$node_prefix/package.json" ] || printf '{"name":"ecpd-language-servers","private":true}\n' >"$node_prefix/package.json"
  (cd "$node_prefix" && npm install --no-audit --no-fund --silent \
    @agentclientprotocol/sdk@1.9.0 zod@3.25.76 @modelcontextprotocol/server-filesystem@2026.8.31 >/dev/null)
fi
# The browser GUI's page: TypeScript, esbuild, xterm and the test's browser
# driver, at the versions clients/web/package-lock.json pins. npm ci starts
# from the lock alone; it runs again only when the lock is newer than what it installed.
web_dir="$(dirname "$0")/../clients/web"
if [ ! -d "$web_dir/node_modules" ] || [ "$web_dir/package-lock.json" -nt "$web_dir/node_modules" ]; then
  echo "install-deps: installing the web page's packages into $web_dir/node_modules"
  (cd "$web_dir" && npm ci --no-audit --no-fund --silent >/dev/null && touch node_modules)
fi
