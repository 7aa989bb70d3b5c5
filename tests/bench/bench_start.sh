#!/bin/sh
# B16: start `ecpd --stdio`, answer one ecp/ping, exit on end of input; the
# median wall time beside `nvim --headless -u NONE +q`, both through hyperfine
# in the same run.
#
#   sh tests/bench/bench_start.sh path/to/ecpd [rounds]
#
# The machine may be shared: hyperfine runs all of one command before the
# other, so a burst of load would fall on one side only. The two are measured
# in alternating rounds (ecpd, nvim, ecpd, nvim...) and each median is taken
# over all its rounds' runs. Also printed: the shared libraries each loads at
# start (ldd), which was most of what ecpd's start cost before libcurl, libpq
# and libgit2 were opened at first use.
set -eu
ecpd="$1"
rounds="${2:-4}"
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
round=1
while [ "$round" -le "$rounds" ]; do
  hyperfine -N --warmup 3 --runs 20 --export-json "$dir/ecpd-$round.json" "sh $dir/ecpd.sh" >/dev/null 2>&1
  hyperfine -N --warmup 3 --runs 20 --export-json "$dir/nvim-$round.json" "sh $dir/nvim.sh" >/dev/null 2>&1
  round=$((round + 1))
done
ecpd_libs=$(ldd "$ecpd" | wc -l)
nvim_libs=$(ldd "$(command -v nvim)" | wc -l)
/usr/bin/python3 - "$dir" "$rounds" "$ecpd_libs" "$nvim_libs" <<'EOS'
import json, statistics, sys
d, rounds, ecpd_libs, nvim_libs = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
def times(name):
    out = []
    for r in range(1, rounds + 1):
        out += json.load(open("%s/%s-%d.json" % (d, name, r)))["results"][0]["times"]
    return out
e, n = statistics.median(times("ecpd")) * 1000, statistics.median(times("nvim")) * 1000
print("B16 start_ping_exit ecpd_ms=%.1f nvim_ms=%.1f ratio=%.2f libraries ecpd=%s nvim=%s"
      % (e, n, e / n, ecpd_libs, nvim_libs))
EOS
