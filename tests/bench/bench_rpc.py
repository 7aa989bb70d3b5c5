#!/usr/bin/env python3
"""Wire benchmarks B1, B2, B2-cpu and B6: ecpd against nvim --embed and a raw
AF_UNIX echo, all driven by this one Python client so the client's own cost is
the same on every side.

usage: bench_rpc.py ECPD ECHO_FLOOR [--n N]

Server CPU comes from /proc/<pid>/task/*/schedstat (nanoseconds on CPU, every thread), read before
and after each workload, so it counts the server's work only. Each figure is
the median of several rounds. Prints one machine-readable line per workload.
"""
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import msgpack

ROUNDS = 3


def cpu_ns(pid):
    """CPU time of every thread of the process: the loop's, and the pool's, writer's and journal's."""
    total = 0
    for task in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, task)) as f:
                total += int(f.read().split()[0])
        except FileNotFoundError:  # a thread that ended between the listing and the read
            pass
    return total


def pct(values, p):
    s = sorted(values)
    return s[min(len(s) - 1, int(len(s) * p))]


# ----- ecpd ---------------------------------------------------------------------

class Ecpd:
    def __init__(self, ecpd, tmp, socket_path=None):
        self.data = tempfile.mkdtemp(dir=tmp)
        if socket_path:
            self.p = subprocess.Popen([ecpd, "--socket", socket_path, "--data-dir", self.data],
                                      stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for _ in range(500):
                try:
                    self.s = socket.socket(socket.AF_UNIX)
                    self.s.connect(socket_path)
                    break
                except OSError:
                    time.sleep(0.01)
            self.w = self.s.sendall
            self.r = self.s.recv
        else:
            self.p = subprocess.Popen([ecpd, "--stdio", "--data-dir", self.data], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=0)
            self.w = self.p.stdin.write
            self.r = self.p.stdout.read1 if hasattr(self.p.stdout, "read1") else self.p.stdout.read
        self.buf = b""
        self.pos = 0  # start of the unread part of buf: slicing per line would be quadratic
        self.next_id = 0

    def send(self, method, params):
        self.next_id += 1
        self.w(json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params},
                          separators=(",", ":")).encode() + b"\n")

    def line(self):
        while True:
            i = self.buf.find(b"\n", self.pos)
            if i >= 0:
                line = self.buf[self.pos:i]
                self.pos = i + 1
                return line
            chunk = self.r(1 << 16)
            if not chunk:
                raise EOFError
            self.buf = self.buf[self.pos:] + chunk
            self.pos = 0

    def response(self):
        while True:
            msg = json.loads(self.line())
            if "id" in msg:
                return msg

    def call(self, method, params):
        self.send(method, params)
        return self.response()

    def close(self):
        self.p.kill()
        self.p.wait()


def ecpd_sequential(srv, method, params_of, n):
    lat = []
    c0 = cpu_ns(srv.p.pid)
    for i in range(n):
        t = time.perf_counter_ns()
        r = srv.call(method, params_of(i))
        lat.append(time.perf_counter_ns() - t)
        if "error" in r:
            raise RuntimeError(r)
    return lat, (cpu_ns(srv.p.pid) - c0) / n


def ecpd_pipelined_quiet(srv, method, params_of, n):
    """n notifications (no answers) on a connection that takes no change events, as nvim's buffer has
    nobody attached, then one request that is answered after all of them."""
    srv.call("notifications/unsubscribe", {"events": ["document/didChange"]})
    payload = b"".join(json.dumps({"jsonrpc": "2.0", "method": method, "params": params_of(i)},
                                  separators=(",", ":")).encode() + b"\n" for i in range(n))
    t = time.perf_counter()
    srv.w(payload)
    srv.call("ecp/ping", {})
    return n / (time.perf_counter() - t)


def ecpd_pipelined_cpu(srv, method, params_of, n):
    """Server CPU per request of n pipelined requests, each answered, on a connection that takes no change
    events: like for like with nvim's answered requests on a buffer nobody is attached to."""
    srv.call("notifications/unsubscribe", {"events": ["document/didChange"]})
    payload = b"".join(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params_of(i)},
                                  separators=(",", ":")).encode() + b"\n" for i in range(n))
    c0 = cpu_ns(srv.p.pid)
    writer = threading.Thread(target=srv.w, args=(payload,))
    writer.start()
    for _ in range(n):
        srv.line()
    writer.join()
    return (cpu_ns(srv.p.pid) - c0) / n


def ecpd_pipelined(srv, method, params_of, n):
    payload = b"".join(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params_of(i)},
                                  separators=(",", ":")).encode() + b"\n" for i in range(n))
    t = time.perf_counter()
    writer = threading.Thread(target=srv.w, args=(payload,))
    writer.start()
    answered = 0
    while answered < n:  # count responses only: an edit also sends didChange
        answered += srv.line().startswith(b'{"jsonrpc":"2.0","id":')
    writer.join()
    return n / (time.perf_counter() - t)


# ----- nvim ---------------------------------------------------------------------

class Nvim:
    def __init__(self):
        self.p = subprocess.Popen(["nvim", "--embed", "--headless", "--clean", "-n"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, bufsize=0)
        self.unpacker = msgpack.Unpacker(raw=False)
        self.next_id = 0

    def send(self, method, args):
        self.next_id += 1
        self.p.stdin.write(msgpack.packb([0, self.next_id, method, args]))

    def notify(self, method, args):
        self.p.stdin.write(msgpack.packb([2, method, args]))

    def response(self):
        while True:
            for msg in self.unpacker:
                if msg[0] == 1:
                    if msg[2] is not None:
                        raise RuntimeError(msg[2])
                    return msg
            self.unpacker.feed(self.p.stdout.read(1 << 16))  # unbuffered: returns what is there

    def call(self, method, args):
        self.send(method, args)
        return self.response()

    def close(self):
        self.p.kill()
        self.p.wait()


def nvim_pipelined_cpu(nv, method, args_of, n):
    payload = b"".join(msgpack.packb([0, i, method, args_of(i)]) for i in range(n))
    c0 = cpu_ns(nv.p.pid)
    writer = threading.Thread(target=nv.p.stdin.write, args=(payload,))
    writer.start()
    answered = 0
    while answered < n:
        for msg in nv.unpacker:
            if msg[0] == 1:
                answered += 1
        if answered < n:
            nv.unpacker.feed(nv.p.stdout.read(1 << 16))
    writer.join()
    return (cpu_ns(nv.p.pid) - c0) / n


def nvim_sequential(nv, method, args_of, n):
    lat = []
    c0 = cpu_ns(nv.p.pid)
    for i in range(n):
        t = time.perf_counter_ns()
        nv.call(method, args_of(i))
        lat.append(time.perf_counter_ns() - t)
    return lat, (cpu_ns(nv.p.pid) - c0) / n


# ----- the floor ----------------------------------------------------------------

def floor_sequential(echo, tmp, n):
    path = os.path.join(tmp, "floor.sock")
    p = subprocess.Popen([echo, path])
    for _ in range(500):
        try:
            s = socket.socket(socket.AF_UNIX)
            s.connect(path)
            break
        except OSError:
            time.sleep(0.01)
    msg = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ecp/ping", "params": {}}).encode() + b"\n"
    lat = []
    for _ in range(n):
        t = time.perf_counter_ns()
        s.sendall(msg)
        got = b""
        while not got.endswith(b"\n"):
            got += s.recv(65536)
        lat.append(time.perf_counter_ns() - t)
    s.close()
    p.wait()
    return lat


def median_of(rounds):
    return statistics.median(rounds)


def main():
    ecpd, echo = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    n = 20000
    if "--n" in sys.argv:
        n = int(sys.argv[sys.argv.index("--n") + 1])
    tmp = tempfile.mkdtemp(prefix="ecpd-bench-")
    doc_text = "".join("line %d of the benchmark document\n" % i for i in range(1000))

    # B1 ------------------------------------------------------------------------
    floor = [pct(floor_sequential(echo, tmp, n), 0.5) / 1000 for _ in range(ROUNDS)]
    floor_p50 = median_of(floor)
    p99_of = {}
    for transport in ("stdio", "socket"):
        for method in ("ecp/ping", "document/info"):
            p50s, p99s, p999s, cpus = [], [], [], []
            for r in range(ROUNDS):
                srv = Ecpd(ecpd, tmp, os.path.join(tmp, "b1-%s-%d.sock" % (transport, r)) if transport == "socket" else None)
                doc = srv.call("document/open", {"uri": "memory://bench.txt", "content": doc_text})["result"]["documentId"]
                params = (lambda i: {}) if method == "ecp/ping" else (lambda i, d=doc: {"documentId": d})
                lat, cpu = ecpd_sequential(srv, method, params, n)
                srv.close()
                p50s.append(pct(lat, 0.5) / 1000)
                p99s.append(pct(lat, 0.99) / 1000)
                p999s.append(pct(lat, 0.999) / 1000)
                cpus.append(cpu / 1000)
            p99_of[transport, method] = median_of(p99s)
            print("B1 transport=%s method=%s p50_us=%.1f p99_us=%.1f p99.9_us=%.1f server_cpu_us=%.2f floor_p50_us=%.1f"
                  % (transport, method, median_of(p50s), median_of(p99s), median_of(p999s), median_of(cpus), floor_p50),
                  flush=True)
    nv_p50, nv_p99, nv_p999, nv_cpu = [], [], [], []
    for _ in range(ROUNDS):
        nv = Nvim()
        lat, cpu = nvim_sequential(nv, "nvim_buf_line_count", lambda i: [0], n)
        nv.close()
        nv_p50.append(pct(lat, 0.5) / 1000)
        nv_p99.append(pct(lat, 0.99) / 1000)
        nv_p999.append(pct(lat, 0.999) / 1000)
        nv_cpu.append(cpu / 1000)
    print("B1 comparator=nvim method=nvim_buf_line_count p50_us=%.1f p99_us=%.1f p99.9_us=%.1f server_cpu_us=%.2f"
          % (median_of(nv_p50), median_of(nv_p99), median_of(nv_p999), median_of(nv_cpu)), flush=True)
    ours_p99 = p99_of["stdio", "document/info"]
    print("B1-tail method=document/info transport=stdio p99_us=%.1f nvim_p99_us=%.1f ratio=%.2f"
          % (ours_p99, median_of(nv_p99), ours_p99 / median_of(nv_p99)), flush=True)

    # B2 ------------------------------------------------------------------------
    m = 100000
    ours = []
    for _ in range(ROUNDS):
        srv = Ecpd(ecpd, tmp)
        ours.append(ecpd_pipelined(srv, "ecp/ping", lambda i: {}, m))
        srv.close()
    edits = []
    for _ in range(ROUNDS):
        srv = Ecpd(ecpd, tmp)
        doc = srv.call("document/open", {"uri": "memory://b2.txt", "content": doc_text})["result"]["documentId"]
        edits.append(ecpd_pipelined(srv, "document/insert",
                                    lambda i: {"documentId": doc, "position": {"line": i % 1000, "column": 0}, "text": "x"}, m))
        srv.close()
    quiet = []
    for _ in range(ROUNDS):
        srv = Ecpd(ecpd, tmp)
        doc = srv.call("document/open", {"uri": "memory://b2q.txt", "content": doc_text})["result"]["documentId"]
        quiet.append(ecpd_pipelined_quiet(srv, "document/insert",
                                          lambda i: {"documentId": doc, "position": {"line": i % 1000, "column": 0},
                                                     "text": "x"}, m))
        srv.close()
    theirs = []
    for _ in range(ROUNDS):
        nv = Nvim()
        payload = b"".join(msgpack.packb([2, "nvim_buf_set_lines", [0, 0, 1, False, ["x%d" % i]]]) for i in range(m))
        t = time.perf_counter()
        nv.p.stdin.write(payload)
        nv.call("nvim_buf_line_count", [0])  # answered only after every notification
        theirs.append(m / (time.perf_counter() - t))
        nv.close()
    # ratio: requests, each answered and its change event sent; ratio_quiet: notifications that nobody
    # watches, like for like with nvim's set_lines notifications on a buffer nobody is attached to
    print("B2 ping_msgs_per_s=%.0f insert_msgs_per_s=%.0f insert_quiet_msgs_per_s=%.0f nvim_set_lines_msgs_per_s=%.0f "
          "ratio=%.2f ratio_quiet=%.2f"
          % (median_of(ours), median_of(edits), median_of(quiet), median_of(theirs),
             median_of(edits) / median_of(theirs), median_of(quiet) / median_of(theirs)), flush=True)

    # B2-cpu: server CPU per pipelined insert, answered, nobody watching the buffer, on both sides
    ours_cpu, theirs_cpu = [], []
    for _ in range(ROUNDS):
        srv = Ecpd(ecpd, tmp)
        doc = srv.call("document/open", {"uri": "memory://b2c.txt", "content": doc_text})["result"]["documentId"]
        ours_cpu.append(ecpd_pipelined_cpu(srv, "document/insert",
                                           lambda i: {"documentId": doc, "position": {"line": i % 1000, "column": 0},
                                                      "text": "x"}, m) / 1000)
        srv.close()
        nv = Nvim()
        nv.call("nvim_buf_set_lines", [0, 0, -1, False, doc_text.splitlines()])
        theirs_cpu.append(nvim_pipelined_cpu(nv, "nvim_buf_set_text",
                                             lambda i: [0, i % 1000, 0, i % 1000, 0, ["x"]], m) / 1000)
        nv.close()
    print("B2-cpu insert_server_cpu_us=%.2f nvim_set_text_cpu_us=%.2f ratio=%.2f"
          % (median_of(ours_cpu), median_of(theirs_cpu), median_of(ours_cpu) / median_of(theirs_cpu)), flush=True)

    # B6 ------------------------------------------------------------------------
    e_p50, e_cpu = [], []
    for _ in range(ROUNDS):
        srv = Ecpd(ecpd, tmp)
        doc = srv.call("document/open", {"uri": "memory://b6.txt", "content": doc_text})["result"]["documentId"]
        lat, cpu = ecpd_sequential(srv, "document/insert",
                                   lambda i: {"documentId": doc, "position": {"line": i % 1000, "column": 0}, "text": "x"}, n)
        srv.close()
        e_p50.append(pct(lat, 0.5) / 1000)
        e_cpu.append(cpu / 1000)
    n_p50, n_cpu = [], []
    for _ in range(ROUNDS):
        nv = Nvim()
        nv.call("nvim_buf_set_lines", [0, 0, -1, False, doc_text.splitlines()])
        lat, cpu = nvim_sequential(nv, "nvim_buf_set_text", lambda i: [0, i % 1000, 0, i % 1000, 0, ["x"]], n)
        nv.close()
        n_p50.append(pct(lat, 0.5) / 1000)
        n_cpu.append(cpu / 1000)
    print("B6 p50_us=%.1f server_cpu_us=%.2f nvim_p50_us=%.1f nvim_cpu_us=%.2f cpu_ratio=%.2f"
          % (median_of(e_p50), median_of(e_cpu), median_of(n_p50), median_of(n_cpu), median_of(e_cpu) / median_of(n_cpu)),
          flush=True)


if __name__ == "__main__":
    main()
