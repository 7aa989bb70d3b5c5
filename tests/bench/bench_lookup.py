#!/usr/bin/env python3
"""B19: lookups by id among many open documents.

usage: bench_lookup.py ECPD [--documents N]

Starts ecpd on a socket, opens N documents (10,000 by default, each under its
own untitled: uri), then asks document/info for each. Requests go out in
batches of 500 without waiting, so the figures are the server's work rather
than round trips. Prints one line:

  B19 documents=N open_s=... info_s=... info_per_s=...

There is no comparator: the figure to watch is how info_per_s holds up as N
grows (a lookup that walks every document falls as 1/N).
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

BATCH = 500


class Conn:
    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.connect(path)
        self.f = self.s.makefile("rb")
        self.next_id = 0

    def batch(self, calls):
        """Sends every (method, params) at once, then reads their answers."""
        out = []
        for method, params in calls:
            self.next_id += 1
            out.append(json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}))
        self.s.sendall(("\n".join(out) + "\n").encode())
        answers = {}
        while len(answers) < len(calls):
            m = json.loads(self.f.readline())
            if "id" in m and "method" not in m:
                answers[m["id"]] = m
        first = self.next_id - len(calls) + 1
        return [answers[first + i] for i in range(len(calls))]


def main():
    ecpd = os.path.abspath(sys.argv[1])
    count = int(sys.argv[sys.argv.index("--documents") + 1]) if "--documents" in sys.argv else 10000
    tmp = tempfile.mkdtemp(prefix="ecpd-b19-")
    path = os.path.join(tmp, "run", "ecpd.sock")
    srv = subprocess.Popen([ecpd, "--socket", path, "--data-dir", os.path.join(tmp, "data")],
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 10
        while True:
            try:
                c = Conn(path)
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.01)
        c.batch([("notifications/unsubscribe", {"events": ["*"]})])
        ids = []
        start = time.time()
        for first in range(0, count, BATCH):
            calls = [("document/open", {"uri": "untitled:b19-%d" % d, "content": "line %d\n" % d})
                     for d in range(first, min(count, first + BATCH))]
            ids += [r["result"]["documentId"] for r in c.batch(calls)]
        open_s = time.time() - start
        start = time.time()
        errors = 0
        for first in range(0, count, BATCH):
            for r in c.batch([("document/info", {"documentId": d}) for d in ids[first:first + BATCH]]):
                errors += "error" in r
        info_s = time.time() - start
        print("B19 documents=%d errors=%d open_s=%.2f info_s=%.2f info_per_s=%.0f"
              % (count, errors, open_s, info_s, count / info_s))
        c.s.close()
    finally:
        srv.send_signal(signal.SIGTERM)
        srv.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
