#!/bin/sh
# Grows the committed corpora: runs each libFuzzer target for a while from
# its corpus, then merges everything back, minimised, into
# tests/fuzz/corpus/<target>/.
#
# Usage:
#   sh tests/fuzz/grow_corpus.sh [BUILD_DIR] [SECONDS]
#     BUILD_DIR  the fuzz tree (default: build-fuzz; see run_fuzzers.sh for how
#                to configure and build it)
#     SECONDS    how long each target fuzzes (default: 60)
#   FUZZ_TARGETS="fuzz_json fuzz_methods" limits it to those targets.
#
# For each target:
#   1. it fuzzes for SECONDS from a copy of its corpus (the committed files
#      are not touched while it runs);
#   2. the copy is merged (-merge=1) into a fresh directory, which keeps the
#      fewest inputs that reach every feature the copy reaches. If that still
#      leaves more than MAX_FILES (default 300) inputs, the merge is redone on
#      edges alone (-use_counters=0), which keeps fewer;
#   3. the result replaces tests/fuzz/corpus/<target>/. A committed input that
#      survives keeps its name; new ones are named by their SHA-1.
# A target that crashes is not merged: its input goes to
# tests/fuzz/regressions/<target>/ (as run_fuzzers.sh does), and the script
# exits non-zero after the others. Review and commit the corpus changes.
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

build=build-fuzz
seconds=60
case "${1:-}" in
'') ;;
*[!0-9]*) build=$1; seconds=${2:-60} ;;
*) seconds=$1 ;;
esac
case "$build" in
/*) ;;
*) build="$root/$build" ;;
esac
max_files=${MAX_FILES:-300}

if [ ! -d "$build" ]; then
    echo "grow_corpus: no build directory $build (see run_fuzzers.sh)" >&2
    exit 2
fi
targets=${FUZZ_TARGETS:-$(find "$build" -type f -name 'fuzz_*' -perm -u+x 2>/dev/null | sed 's|.*/||' | sort -u)}
if [ -z "$targets" ]; then
    echo "grow_corpus: no fuzz_* executables under $build" >&2
    exit 2
fi

max_len_of() {
    case "$1" in
    fuzz_framing) echo 2048 ;;
    *) echo 4096 ;;
    esac
}

count() { ls -A "$1" | wc -l | tr -d ' '; }

work=$(mktemp -d "${TMPDIR:-/tmp}/ecpd-grow.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM

failed=""
for target in $targets; do
    bin=$(find "$build" -type f -name "$target" -perm -u+x 2>/dev/null | head -n 1)
    if [ -z "$bin" ]; then
        echo "== $target: not built, skipped"
        continue
    fi
    corpus="$here/corpus/$target"
    mkdir -p "$corpus"
    found="$work/$target.found"
    artifacts="$work/$target.artifacts"
    mkdir -p "$found" "$artifacts"
    cp "$corpus"/* "$found"/ 2>/dev/null
    before=$(count "$corpus")
    len=$(max_len_of "$target")
    log="$work/$target.log"

    # 1. fuzz
    if ! "$bin" -max_total_time="$seconds" -max_len="$len" -timeout=20 -rss_limit_mb=2560 \
        -print_final_stats=1 -artifact_prefix="$artifacts/" "$found" >"$log" 2>&1; then
        echo "== $target: FAILED while fuzzing:"
        grep -E 'ERROR|SUMMARY|runtime error|Test unit written' "$log" | head -n 20
        mkdir -p "$here/regressions/$target"
        for f in "$artifacts"/*; do
            [ -f "$f" ] || continue
            cp "$f" "$here/regressions/$target/"
            echo "   input saved as tests/fuzz/regressions/$target/$(basename "$f")"
        done
        failed="$failed $target"
        continue
    fi
    stats=$(grep -E '^#[0-9]+.*DONE' "$log" | tail -n 1 | sed 's/^#[0-9]*[[:space:]]*DONE[[:space:]]*//')

    # 2. minimise into a fresh directory
    merged="$work/$target.merged"
    mkdir -p "$merged"
    "$bin" -merge=1 -max_len="$len" -timeout=20 -rss_limit_mb=2560 "$merged" "$found" >"$log.merge" 2>&1 || {
        echo "== $target: the merge failed:"
        tail -n 20 "$log.merge"
        failed="$failed $target"
        continue
    }
    if [ "$(count "$merged")" -gt "$max_files" ]; then
        rm -rf "$merged"
        mkdir -p "$merged"
        "$bin" -merge=1 -use_counters=0 -max_len="$len" -timeout=20 -rss_limit_mb=2560 "$merged" "$found" \
            >"$log.merge" 2>&1 || {
            echo "== $target: the merge on edges failed:"
            tail -n 20 "$log.merge"
            failed="$failed $target"
            continue
        }
    fi

    if [ "$(count "$merged")" -eq 0 ]; then
        echo "== $target: the merge kept nothing; the corpus is left as it was:"
        tail -n 20 "$log.merge"
        failed="$failed $target"
        continue
    fi

    # 3. replace the committed corpus, keeping the names of inputs that stay
    for f in "$corpus"/*; do
        [ -f "$f" ] || continue
        sum=$(sha1sum "$f" | cut -d' ' -f1)
        if [ -f "$merged/$sum" ]; then
            mv "$merged/$sum" "$merged/$(basename "$f")"
        fi
    done
    rm -f "$corpus"/*
    cp "$merged"/* "$corpus"/ 2>/dev/null
    echo "== $target: ${seconds}s ($stats); corpus $before -> $(count "$corpus") files"
done

if [ -n "$failed" ]; then
    echo "grow_corpus: failed:$failed" >&2
    exit 1
fi
echo "grow_corpus: done; review and commit tests/fuzz/corpus/"
