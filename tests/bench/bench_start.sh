#!/bin/sh
# B16: start `ecpd --stdio`, answer one ecp/ping, exit on end of input; the
# median wall time beside `nvim --headless -u NONE +q`, both through hyperfine
# in the same run.
#
#   sh tests/bench/bench_start.sh path/to/ecpd
set -eu
ecpd="$1"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
printf '{"jsonrpc":"2.0","id":1,"method":"ecp/ping"}\n' >"$dir/ping"
# The server refuses a regular file as stdin (it wants a pipe), so a shell
# pipes the request in; nvim runs under the same shell to pay the same cost.
cat >"$dir/ecpd.sh" <<EOS
cat "$dir/ping" | "$ecpd" --stdio >/dev/null 2>&1
EOS
cat >"$dir/nvim.sh" <<EOS
cat "$dir/ping" >/dev/null; nvim --headless -u NONE +q
EOS
hyperfine -N --warmup 5 --runs 60 --export-json "$dir/out.json" "sh $dir/ecpd.sh" "sh $dir/nvim.sh" >/dev/null 2>&1
/usr/bin/python3 - "$dir/out.json" <<'EOS'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
e, n = r[0]["median"] * 1000, r[1]["median"] * 1000
print("B16 start_ping_exit ecpd_ms=%.1f nvim_ms=%.1f ratio=%.2f" % (e, n, e / n))
EOS
