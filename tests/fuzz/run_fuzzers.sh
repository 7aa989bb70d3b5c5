#!/bin/sh
# Runs every libFuzzer target of a clang build for a short time.
#
# Usage:
#   sh tests/fuzz/run_fuzzers.sh [BUILD_DIR] [SECONDS]
#   sh tests/fuzz/run_fuzzers.sh SECONDS
#     BUILD_DIR  a tree configured with CC=clang (default: build-fuzz; a relative
#                path is taken from the repository root), where
#                the fuzz_* executables were built, e.g.
#                  CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DECPD_FUZZ_INSTRUMENT=ON
#                  cmake --build build-fuzz --target fuzz_json fuzz_framing fuzz_peer fuzz_dispatch \
#                      fuzz_piece_tree fuzz_methods fuzz_syntax fuzz_glob fuzz_when \
#                      fuzz_settings fuzz_acp fuzz_eca
#                (without ECPD_FUZZ_INSTRUMENT, libFuzzer sees only the
#                harnesses, not the code they drive)
#     SECONDS    how long each target fuzzes (default: 20)
#   FUZZ_TARGETS="fuzz_json fuzz_framing" limits the run to those targets.
#
# For each target found in BUILD_DIR (any executable named fuzz_*):
#   1. every file in tests/fuzz/regressions/<target>/ is replayed once: these
#      are inputs that once crashed a target, kept as regression tests;
#   2. the target fuzzes for SECONDS, starting from a temporary copy of its
#      seeds in tests/fuzz/corpus/<target>/ (the seeds are never modified),
#      with a -max_len suited to it.
# When a target crashes, leaks, times out or runs out of memory, the input
# that did it is copied into tests/fuzz/regressions/<target>/ (commit it once
# the bug is fixed) and the script exits non-zero after running the others.
# Each target's executions are printed, so a run that did nothing shows.
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

build=build-fuzz
seconds=20
case "${1:-}" in
'') ;;
*[!0-9]*) build=$1; seconds=${2:-20} ;;
*) seconds=$1 ;;
esac
case "$build" in
/*) ;;
*) build="$root/$build" ;;
esac

if [ ! -d "$build" ]; then
    echo "run_fuzzers: no build directory $build (see the usage at the top of this script)" >&2
    exit 2
fi

targets=${FUZZ_TARGETS:-$(find "$build" -type f -name 'fuzz_*' -perm -u+x 2>/dev/null | sed 's|.*/||' | sort -u)}
if [ -z "$targets" ]; then
    echo "run_fuzzers: no fuzz_* executables under $build" >&2
    exit 2
fi

max_len_of() {
    case "$1" in
    fuzz_framing | fuzz_peer) echo 2048 ;;
    fuzz_json | fuzz_dispatch) echo 4096 ;;
    *) echo 4096 ;;
    esac
}

work=$(mktemp -d "${TMPDIR:-/tmp}/ecpd-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM

failed=""
for target in $targets; do
    bin=$(find "$build" -type f -name "$target" -perm -u+x 2>/dev/null | head -n 1)
    if [ -z "$bin" ]; then
        echo "== $target: not built, skipped"
        continue
    fi
    regressions="$here/regressions/$target"
    seeds="$here/corpus/$target"

    # 1. regressions
    if [ -d "$regressions" ] && [ -n "$(ls -A "$regressions" 2>/dev/null)" ]; then
        count=$(ls -A "$regressions" | wc -l | tr -d ' ')
        if "$bin" -runs=1 "$regressions"/* >"$work/$target.replay.log" 2>&1; then
            echo "== $target: $count regression input(s) pass"
        else
            echo "== $target: a regression input fails:"
            tail -n 40 "$work/$target.replay.log"
            failed="$failed $target"
            continue
        fi
    fi

    # 2. fuzzing from a copy of the seeds
    corpus="$work/$target.corpus"
    artifacts="$work/$target.artifacts"
    mkdir -p "$corpus" "$artifacts"
    if [ -d "$seeds" ]; then
        cp "$seeds"/* "$corpus"/ 2>/dev/null
    fi
    len=$(max_len_of "$target")
    log="$work/$target.log"
    echo "== $target: fuzzing for ${seconds}s (max_len $len, $(ls -A "$corpus" | wc -l | tr -d ' ') seed(s))"
    if "$bin" -max_total_time="$seconds" -max_len="$len" -timeout=20 -rss_limit_mb=2560 \
        -print_final_stats=1 -artifact_prefix="$artifacts/" "$corpus" >"$log" 2>&1; then
        runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
        echo "   ok: ${runs:-?} executions"
    else
        echo "   FAILED:"
        grep -E 'ERROR|SUMMARY|runtime error|Test unit written' "$log" | head -n 20
        mkdir -p "$regressions"
        found=0
        for f in "$artifacts"/crash-* "$artifacts"/leak-* "$artifacts"/timeout-* "$artifacts"/oom-* "$artifacts"/slow-unit-*; do
            [ -f "$f" ] || continue
            cp "$f" "$regressions/"
            echo "   input saved as tests/fuzz/regressions/$target/$(basename "$f")"
            found=1
        done
        [ "$found" = 1 ] || tail -n 40 "$log"
        failed="$failed $target"
    fi
done

if [ -n "$failed" ]; then
    echo "run_fuzzers: failed:$failed" >&2
    exit 1
fi
echo "run_fuzzers: all targets passed"
