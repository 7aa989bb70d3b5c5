#!/bin/sh
# Fetches the tree-sitter runtime and the grammars the syntax service builds,
# at pinned versions, into third_party/tree-sitter/ and
# third_party/grammars/<name>/{src,queries}. `npm pack` downloads a tarball
# without running its install scripts.
#
# The runtime is the C library the Node binding tree-sitter@0.25.1 vendors
# (ABI 13..15): its tarball must match the registry's sha512, or nothing is
# unpacked and the script fails, since nothing builds without it. Of the
# grammars only src/ and queries/ (and the licence) are kept; they are the
# newest releases that runtime loads. Anything already fetched at its pin is
# skipped, so running this again costs nothing. A grammar that cannot be
# fetched is reported and skipped: the build leaves that language out.
#
#   sh third_party/fetch-grammars.sh [GRAMMAR_DEST [RUNTIME_DEST]]
set -eu

DEST=${1:-$(dirname "$0")/grammars}
RUNTIME_DEST=${2:-$(dirname "$0")/tree-sitter}
RUNTIME=tree-sitter@0.25.1
RUNTIME_SHA512=mrcEdkYtHfrK1A6fs3O6FxkBo0Qig5XUXqHhxUOQu0bmPo00QF4XaSx4edpazdHwxnSCjlGKGgIqWdaN4dvTLA==
PINS="tree-sitter-c@0.24.1 tree-sitter-cpp@0.23.4 tree-sitter-javascript@0.25.0
  tree-sitter-typescript@0.23.2 tree-sitter-python@0.25.0 tree-sitter-json@0.24.8
  tree-sitter-rust@0.24.0 tree-sitter-go@0.25.0 tree-sitter-bash@0.25.1
  @tree-sitter-grammars/tree-sitter-markdown@0.3.2 tree-sitter-html@0.23.2
  tree-sitter-css@0.25.0 tree-sitter-java@0.23.5 @tree-sitter-grammars/tree-sitter-lua@0.4.1
  @tree-sitter-grammars/tree-sitter-yaml@0.7.1 @tree-sitter-grammars/tree-sitter-toml@0.7.0
  tree-sitter-php@0.24.2 tree-sitter-ruby@0.23.1 tree-sitter-c-sharp@0.23.5 @derekstride/tree-sitter-sql@0.3.11
  tree-sitter-make@1.1.1 tree-sitter-kotlin@0.3.8 @tree-sitter-grammars/tree-sitter-zig@1.1.2
  tree-sitter-elixir@0.3.5"

if ! command -v npm >/dev/null 2>&1; then
  echo "fetch-grammars: npm not found: cannot fetch the tree-sitter runtime" >&2
  exit 1
fi

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

runtime_version=${RUNTIME##*@}
if ! [ -f "$RUNTIME_DEST/.pin" ] || [ "$(cat "$RUNTIME_DEST/.pin")" != "$runtime_version" ]; then
  if ! (cd "$TMP" && npm pack --silent "$RUNTIME" >/dev/null 2>&1); then
    echo "fetch-grammars: could not fetch $RUNTIME" >&2
    exit 1
  fi
  tarball=$(ls "$TMP"/*.tgz)
  # The registry's integrity is sha512 in base64; coreutils speak hex.
  expected=$(printf '%s' "$RUNTIME_SHA512" | base64 -d | od -An -v -tx1 | tr -d ' \n')
  actual=$(sha512sum "$tarball" | cut -d' ' -f1)
  if [ "$actual" != "$expected" ]; then
    echo "fetch-grammars: $RUNTIME: sha512 $actual is not the pinned $expected; not unpacked" >&2
    exit 1
  fi
  # Only the C library and its licence; the wasm sources stay out, as the
  # runtime is built without TREE_SITTER_FEATURE_WASM.
  mkdir "$TMP/runtime"
  tar xzf "$tarball" -C "$TMP/runtime" --exclude='package/vendor/tree-sitter/lib/src/wasm' \
    package/LICENSE package/vendor/tree-sitter/lib/src package/vendor/tree-sitter/lib/include
  rm -rf "$RUNTIME_DEST"
  mkdir -p "$RUNTIME_DEST"
  mv "$TMP/runtime/package/vendor/tree-sitter/lib/src" "$TMP/runtime/package/vendor/tree-sitter/lib/include" \
    "$TMP/runtime/package/LICENSE" "$RUNTIME_DEST/"
  rm -rf "$tarball" "$TMP/runtime"
  echo "$runtime_version" > "$RUNTIME_DEST/.pin"
fi

mkdir -p "$DEST"
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
