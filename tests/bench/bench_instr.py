#!/usr/bin/python3
"""B1-instr: user-space instructions per sequential request, counted by
callgrind, ecpd beside nvim driven by the same kind of client.

Each server runs under `valgrind --tool=callgrind` twice, answering FEW and
then MANY sequential calls (each sent after the previous answer came back);
the difference of the two totals divided by MANY - FEW is the cost of one
call, without the start, the teardown or anything that happens once. ecpd is
asked `ecp/ping` and `document/info` over stdio (JSON-RPC); nvim
`nvim_buf_line_count` over msgpack-rpc (`nvim --embed --headless --clean`),
its cheapest comparable call. Instruction counts do not depend on the load
of the machine, so this figure moves only when the code does.

    python3 tests/bench/bench_instr.py build-bench/server/ecpd [--few N] [--many N]
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import msgpack

FEW, MANY = 500, 2500
QUIET_SECONDS = 3.0


def callgrind_total(out_file):
    with open(out_file) as f:
        text = f.read()
    m = re.search(r"^summary: (\d+)", text, re.M) or re.search(r"^totals: (\d+)", text, re.M)
    return int(m.group(1))


def valgrind(cmd, out_file):
    return ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out_file] + cmd


def ecpd_run(ecpd, method, n, tmp):
    out_file = os.path.join(tmp, "cg-ecpd.out")
    data = tempfile.mkdtemp(dir=tmp)
    p = subprocess.Popen(valgrind([ecpd, "--stdio", "--data-dir", data + "/d", "--workspace", data], out_file),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def call(i, m, params=None):
        msg = {"jsonrpc": "2.0", "id": i, "method": m}
        if params is not None:
            msg["params"] = params
        p.stdin.write((json.dumps(msg) + "\n").encode())
        p.stdin.flush()
        while True:
            r = json.loads(p.stdout.readline())
            if r.get("id") == i:
                if "error" in r:
                    raise RuntimeError("%s: %s" % (m, r["error"]))
                return r

    call(1, "initialize", {})
    params = None
    if method == "document/info":
        doc = call(2, "document/open", {"uri": "memory://bench.txt", "content": "hello\nworld\n"})["result"]
        params = {"documentId": doc["documentId"]}
        # An open document starts work that happens once, after a quiet time
        # (its git diff, the first use of libgit2): let it happen before the
        # calls, in every run alike, so that the difference leaves it out.
        time.sleep(QUIET_SECONDS)
        call(3, "ecp/ping")
    for i in range(n):
        call(10 + i, method, params)
    p.stdin.close()
    p.wait()
    return callgrind_total(out_file)


def nvim_run(n, tmp):
    out_file = os.path.join(tmp, "cg-nvim.out")
    p = subprocess.Popen(valgrind(["nvim", "--embed", "--headless", "--clean", "-n"], out_file),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    unpacker = msgpack.Unpacker(raw=False)

    def call(i, method, args):
        p.stdin.write(msgpack.packb([0, i, method, args]))
        p.stdin.flush()
        while True:
            for msg in unpacker:
                if msg[0] == 1 and msg[1] == i:
                    return msg[3]
            data = os.read(p.stdout.fileno(), 65536)
            if not data:
                raise RuntimeError("nvim went away")
            unpacker.feed(data)

    call(1, "nvim_get_api_info", [])
    for i in range(n):
        call(10 + i, "nvim_buf_line_count", [0])
    p.stdin.close()
    p.wait()
    return callgrind_total(out_file)


def per_call(run, few, many):
    return (run(many) - run(few)) / (many - few)


def main():
    ecpd = os.path.abspath(sys.argv[1])
    few = int(sys.argv[sys.argv.index("--few") + 1]) if "--few" in sys.argv else FEW
    many = int(sys.argv[sys.argv.index("--many") + 1]) if "--many" in sys.argv else MANY
    if not shutil.which("valgrind"):
        print("B1-instr skipped: valgrind is not installed")
        return
    tmp = tempfile.mkdtemp(prefix="ecpd-bench-instr-")
    try:
        ping = per_call(lambda n: ecpd_run(ecpd, "ecp/ping", n, tmp), few, many)
        info = per_call(lambda n: ecpd_run(ecpd, "document/info", n, tmp), few, many)
        nvim = per_call(lambda n: nvim_run(n, tmp), few, many)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("B1-instr ping_instr=%.0f info_instr=%.0f nvim_line_count_instr=%.0f ping_ratio=%.2f info_ratio=%.2f"
          % (ping, info, nvim, ping / nvim, info / nvim), flush=True)


if __name__ == "__main__":
    main()
