#!/bin/sh
# Builds ecpd twice and runs the whole test suite on each build, then runs
# every fuzz target briefly:
#   build/        -Werror, optimised: ctest
#   build-asan/   -Werror, AddressSanitizer + UndefinedBehaviorSanitizer: ctest
#   build-tsan/   -Werror, ThreadSanitizer: the tests labelled `threads` (jobs, snapshots)
#   build-fuzz/   clang + libFuzzer, every library instrumented for it and
#                 for ASan/UBSan: each target for FUZZ_SECONDS (default 12)
# Exits non-zero if any step fails.
set -eu
cd "$(dirname "$0")/.."
sh third_party/install-deps.sh

jobs=$(nproc 2>/dev/null || echo 2)

cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DECPD_WERROR=ON >/dev/null
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure -j"$jobs"

cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DECPD_WERROR=ON -DECPD_SANITIZE=ON >/dev/null
cmake --build build-asan -j"$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp \
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ctest --test-dir build-asan --output-on-failure -j"$jobs"

cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DECPD_WERROR=ON -DECPD_TSAN=ON >/dev/null
cmake --build build-tsan -j"$jobs"
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/tsan.supp \
  ctest --test-dir build-tsan -L threads --output-on-failure

CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DECPD_WERROR=ON -DECPD_FUZZ_INSTRUMENT=ON >/dev/null
cmake --build build-fuzz -j"$jobs" --target fuzz_json fuzz_framing fuzz_peer fuzz_dispatch fuzz_piece_tree fuzz_methods fuzz_syntax \
  fuzz_glob fuzz_when fuzz_settings fuzz_acp fuzz_eca
sh tests/fuzz/run_fuzzers.sh build-fuzz "${FUZZ_SECONDS:-12}"
