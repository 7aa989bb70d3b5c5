#!/bin/sh
# Fetches the tree-sitter grammars the syntax service builds, at pinned
# versions that speak ABI 14 (what Debian's libtree-sitter 0.20.7 loads), into
# third_party/grammars/<name>/{src,queries}. `npm pack` downloads a tarball
# without running its install scripts; only src/, queries/ and the licence are
# kept. A grammar already fetched at its pin is skipped, so running this again
# costs nothing. A grammar that cannot be fetched is reported and skipped: the
# build leaves that language out.
#
#   sh third_party/fetch-grammars.sh [DEST]
set -eu

DEST=${1:-$(dirname "$0")/grammars}
PINS="tree-sitter-c@0.23.6 tree-sitter-cpp@0.23.4 tree-sitter-javascript@0.23.1
  tree-sitter-typescript@0.23.2 tree-sitter-python@0.23.6 tree-sitter-json@0.24.8
  tree-sitter-rust@0.23.3 tree-sitter-go@0.23.4 tree-sitter-bash@0.23.3
  @tree-sitter-grammars/tree-sitter-markdown@0.3.2 tree-sitter-html@0.23.2
  tree-sitter-css@0.23.2 tree-sitter-java@0.23.5 @tree-sitter-grammars/tree-sitter-lua@0.2.0
  @tree-sitter-grammars/tree-sitter-yaml@0.7.1 @tree-sitter-grammars/tree-sitter-toml@0.7.0"

if ! command -v npm >/dev/null 2>&1; then
  echo "fetch-grammars: npm not found; the syntax service will highlight nothing" >&2
  exit 0
fi

mkdir -p "$DEST"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failed=""
for spec in $PINS; do
  name=${spec%@*}; name=${name##*/}; version=${spec##*@}
  if [ -f "$DEST/$name/.pin" ] && [ "$(cat "$DEST/$name/.pin")" = "$version" ]; then
    continue
  fi
  if ! (cd "$TMP" && npm pack --silent "$spec" >/dev/null 2>&1); then
    failed="$failed $spec"
    continue
  fi
  rm -rf "$DEST/$name"
  mkdir -p "$DEST/$name"
  # Multi-grammar packages (typescript/tsx, markdown block/inline) keep
  # their subfolders and a shared common/ directory, so they are unpacked
  # whole except for prebuilt binaries: both markdown grammars are built,
  # the inline one injected into the block one's paragraphs.
  tar xzf "$TMP"/*.tgz -C "$DEST/$name" --strip-components=1 \
    --exclude='package/prebuilds' --exclude='*.wasm' --exclude='package/bindings' --exclude='package/node_modules'
  rm -f "$TMP"/*.tgz
  echo "$version" > "$DEST/$name/.pin"
done
if [ -n "$failed" ]; then
  echo "fetch-grammars: could not fetch:$failed (those languages stay plain text)" >&2
fi
