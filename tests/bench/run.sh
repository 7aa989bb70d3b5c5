#!/bin/sh
# Runs every benchmark of BENCHMARKS.md that ecpd has so far, each beside its
# comparator measured in the same run, and prints their lines then a table.
#
#   sh tests/bench/run.sh            all
#   sh tests/bench/run.sh B1 B13     some
#
# Builds an optimised tree in build-bench/ and installs the comparators
# (Neovim, python3-msgpack, ripgrep, git) from Debian when missing. Benchmarks never
# fail on a number: they print figures to watch.
set -eu
cd "$(dirname "$0")/../.."
sh third_party/install-deps.sh --bench
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DECPD_WERROR=ON >/dev/null
cmake --build build-bench -j"$(nproc)" --target ecpd bench_echo_floor bench_piece_tree bench_document_open bench_grep \
  bench_git_status bench_terminal bench_syntax bench_map ecp-tui ecp-web >/dev/null

want() { [ $# -eq 0 ] && return 0; for w in $selected; do [ "$w" = "$1" ] && return 0; done; return 1; }
selected="$*"
out=$(mktemp)
b=build-bench

{
  if [ -z "$selected" ] || want B1 || want B2 || want B6; then
    /usr/bin/python3 tests/bench/bench_rpc.py "$b/server/ecpd" "$b/tests/bench/bench_echo_floor"
  fi
  if [ -z "$selected" ] || want B1-instr; then /usr/bin/python3 tests/bench/bench_instr.py "$b/server/ecpd"; fi
  if [ -z "$selected" ] || want B3; then "$b/services/document/bench_document_open"; fi
  if [ -z "$selected" ] || want B4 || want B5; then "$b/services/document/bench_piece_tree"; fi
  if [ -z "$selected" ] || want B7 || want B8; then "$b/services/syntax/bench_syntax"; fi
  if [ -z "$selected" ] || want B9; then "$b/services/git/bench_git_status"; fi
  if [ -z "$selected" ] || want B10; then "$b/services/terminal/bench_terminal"; fi
  if [ -z "$selected" ] || want B11; then /usr/bin/python3 tests/bench/bench_clients.py "$b/server/ecpd"; fi
  if [ -z "$selected" ] || want B12; then /usr/bin/python3 tests/bench/bench_agent.py "$b/server/ecpd"; fi
  if [ -z "$selected" ] || want B13; then "$b/services/file/bench_grep"; fi
  if [ -z "$selected" ] || want B14; then /usr/bin/python3 tests/bench/bench_tui.py "$b/clients/tui/ecp-tui"; fi
  if [ -z "$selected" ] || want B15; then /usr/bin/python3 tests/bench/bench_memory.py "$b/server/ecpd"; fi
  if [ -z "$selected" ] || want B16; then sh tests/bench/bench_start.sh "$b/server/ecpd"; fi
  if [ -z "$selected" ] || want B17; then
    ECPD="$b/server/ecpd" ECP_WEB="$b/clients/web/ecp-web" ECP_WEB_STATIC="$b/clients/web/static" \
      node tests/bench/web_keystroke.js
  fi
  if [ -z "$selected" ] || want B18; then "$b/tests/bench/bench_map"; fi
  if [ -z "$selected" ] || want B19; then /usr/bin/python3 tests/bench/bench_lookup.py "$b/server/ecpd"; fi
  if [ -z "$selected" ] || want F1; then /usr/bin/python3 tests/bench/bench_flow.py "$b/server/ecpd"; fi
} | tee "$out"

echo
echo "workload | figures"
echo "---|---"
grep '^B[0-9]' "$out" | sed 's/^\(B[0-9][-a-z0-9]*\) /\1 | /'
echo
/usr/bin/python3 tests/bench/speed_table.py <"$out"
rm -f "$out"
