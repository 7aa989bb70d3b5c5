#!/usr/bin/env python3
"""B11: many socket clients at once on shared documents.

usage: bench_clients.py ECPD [--clients N] [--requests N]

Starts ecpd on a socket, opens a few documents, then runs N client processes
(32 by default), each sending its requests (10,000 by default) one at a time:
ecp/ping, document/info, document/insert and document/lines in turn, on
documents every client shares. Prints one line:

  B11 clients=32 requests=320000 errors=0 req_per_s=... p50_us=... p99_us=... rss_before_kb=... rss_after_kb=...
      server_cpu_us_per_req=...

There is no comparator: the figures are checked against the targets (no
errors, p99 <= 5 ms, RSS flat beyond caches).
"""
import json
import multiprocessing
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

DOCUMENTS = 4


def cpu_seconds(pid):
    # utime + stime of the server: a figure that other load on the machine disturbs less than latency
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class Conn:
    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.connect(path)
        self.f = self.s.makefile("rb")
        self.next_id = 0

    def call(self, method, params):
        self.next_id += 1
        self.s.sendall((json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method,
                                    "params": params}) + "\n").encode())
        while True:
            m = json.loads(self.f.readline())
            if "method" not in m:  # notifications of the others' edits are skipped
                return m


def client(path, docs, requests, index, out):
    c = Conn(path)
    c.call("notifications/unsubscribe", {"events": ["*"]})
    lat, errors = [], 0
    for i in range(requests):
        doc = docs[(index + i) % len(docs)]
        kind = i % 4
        if kind == 0:
            method, params = "ecp/ping", {"i": i}
        elif kind == 1:
            method, params = "document/info", {"documentId": doc}
        elif kind == 2:
            method, params = "document/insert", {"documentId": doc, "position": {"line": i % 100, "column": 0},
                                                 "text": "c%d " % index}
        else:
            method, params = "document/lines", {"documentId": doc, "startLine": i % 100, "endLine": i % 100 + 20}
        t = time.perf_counter_ns()
        r = c.call(method, params)
        lat.append(time.perf_counter_ns() - t)
        if "error" in r or (kind == 2 and not r["result"].get("success")):
            errors += 1
    out.put((lat, errors))


def main():
    ecpd = os.path.abspath(sys.argv[1])
    clients = int(sys.argv[sys.argv.index("--clients") + 1]) if "--clients" in sys.argv else 32
    requests = int(sys.argv[sys.argv.index("--requests") + 1]) if "--requests" in sys.argv else 10000
    tmp = tempfile.mkdtemp(prefix="ecpd-b11-")
    path = os.path.join(tmp, "run", "ecpd.sock")
    srv = subprocess.Popen([ecpd, "--socket", path, "--data-dir", os.path.join(tmp, "data"),
                            "--max-connections", str(clients + 8)],
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 10
        while True:
            try:
                setup = Conn(path)
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.01)
        text = "".join("line %d of a shared document\n" % i for i in range(200))
        docs = [setup.call("document/open", {"uri": "untitled:b11-%d" % d, "content": text})["result"]["documentId"]
                for d in range(DOCUMENTS)]
        rss_before = rss_kb(srv.pid)
        cpu_before = cpu_seconds(srv.pid)
        out = multiprocessing.Queue()
        procs = [multiprocessing.Process(target=client, args=(path, docs, requests, k, out)) for k in range(clients)]
        start = time.time()
        for p in procs:
            p.start()
        results = [out.get() for _ in procs]
        wall = time.time() - start
        for p in procs:
            p.join()
        rss_after = rss_kb(srv.pid)
        cpu = cpu_seconds(srv.pid) - cpu_before
        lat = sorted(x for r in results for x in r[0])
        errors = sum(r[1] for r in results)

        def pct(p):
            return lat[min(len(lat) - 1, int(len(lat) * p))] / 1000.0

        print("B11 clients=%d requests=%d errors=%d req_per_s=%.0f p50_us=%.1f p99_us=%.1f "
              "rss_before_kb=%d rss_after_kb=%d server_cpu_us_per_req=%.1f"
              % (clients, len(lat), errors, len(lat) / wall, pct(0.5), pct(0.99), rss_before, rss_after,
                 cpu * 1e6 / len(lat)))
        setup.s.close()
    finally:
        srv.send_signal(signal.SIGTERM)
        srv.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
