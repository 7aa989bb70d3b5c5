#!/usr/bin/env python3
"""Transport tests: the real ecpd and ecpctl binaries over pipes and sockets.

usage: test_transport.py ECPD ECPCTL

Each test starts its own server with its own data directory and socket, so
tests are independent. What is checked is what a client sees: the bytes of
the responses, exit codes, file modes, and how long things take.
"""
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
import unittest

ECPD = None
ECPCTL = None
# Under AddressSanitizer (its options are set for the tests) the server's own work on the loop is some
# times slower, and its realloc copies where glibc's remaps: bounds on how long others wait grow with it.
SANITIZED = 6 if "quarantine_size_mb" in os.environ.get("ASAN_OPTIONS", "") else 1


def req(id_, method, params=None):
    m = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        m["params"] = params
    return m


def nl(msg):
    return (json.dumps(msg) + "\n").encode()


def cl(msg):
    body = json.dumps(msg).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class Reader:
    """Reads framed messages (either framing) from a file object or socket."""

    def __init__(self, read):
        self.read = read
        self.buf = b""
        self.parts = []     # chunks read but not joined yet: joining on every read is quadratic
        self.pending = 0    # their length
        self.scanned = 0    # bytes of buf already searched for a newline

    def _fill(self):
        chunk = self.read(1 << 20)
        if not chunk:
            raise EOFError("connection closed")
        self.parts.append(chunk)
        self.pending += len(chunk)

    def _join(self):
        if self.parts:
            self.buf += b"".join(self.parts)
            self.parts = []
            self.pending = 0

    def message(self):
        while True:
            self._join()
            if self.buf.startswith(b"Content-Length:"):
                end = self.buf.find(b"\r\n\r\n")
                if end >= 0:
                    n = int(self.buf[15:end].strip())
                    if len(self.buf) >= end + 4 + n:
                        body = self.buf[end + 4:end + 4 + n]
                        self.buf = self.buf[end + 4 + n:]
                        return json.loads(body)
                    while len(self.buf) + self.pending < end + 4 + n:
                        self._fill()
                    continue
            elif len(self.buf) >= 16:
                i = self.buf.find(b"\n", self.scanned)
                if i >= 0:
                    line, self.buf = self.buf[:i], self.buf[i + 1:]
                    self.scanned = 0
                    assert b"\r" not in line
                    return json.loads(line)
                self.scanned = len(self.buf)
                self._fill()
                while b"\n" not in self.parts[-1]:
                    self._fill()
                continue
            else:
                i = self.buf.find(b"\n")
                if i >= 0 and not self.buf.startswith(b"C"):
                    line, self.buf = self.buf[:i], self.buf[i + 1:]
                    self.scanned = 0
                    assert b"\r" not in line
                    return json.loads(line)
            self._fill()


class Stdio:
    def __init__(self, tmp, *args):
        self.p = subprocess.Popen([ECPD, "--stdio", "--data-dir", os.path.join(tmp, "data"), *args],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.r = Reader(self.p.stdout.read1)

    def send(self, data):
        self.p.stdin.write(data)
        self.p.stdin.flush()

    def recv(self):
        return self.r.message()

    def call(self, msg, framing=nl):
        self.send(framing(msg))
        return self.recv()

    def close(self, timeout=5):
        try:
            self.p.stdin.close()
        except BrokenPipeError:
            pass
        code = self.p.wait(timeout)
        self.p.stdout.close()
        self.p.stderr.close()
        return code


class SocketServer:
    def __init__(self, tmp, *args):
        self.dir = os.path.join(tmp, "run")
        self.path = os.path.join(self.dir, "ecpd.sock")
        self.p = subprocess.Popen([ECPD, "--socket", self.path, "--data-dir", os.path.join(tmp, "data"), *args],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.time() + 10
        while True:  # a stale socket file may exist already: wait until one answers
            try:
                self.connect().close()
                break
            except OSError:
                if time.time() > deadline or self.p.poll() is not None:
                    raise RuntimeError("server did not start: " + self.p.stderr.read().decode())
                time.sleep(0.01)

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(self.path)
        s.settimeout(20)
        return s

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
        code = self.p.wait(5)
        self.p.stderr.close()
        return code


class Client:
    def __init__(self, sock):
        self.s = sock
        self.r = Reader(sock.recv)

    def call(self, msg, framing=nl):
        """Sends a request and returns its response, skipping notifications."""
        self.s.sendall(framing(msg))
        while True:
            m = self.r.message()
            if "method" not in m:
                return m


def peak_rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


PINGER = r"""
import json, socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
f = s.makefile("rb")
worst, k = 0.0, 0
sys.stdout.write("ready\n"); sys.stdout.flush()
while True:
    k += 1
    t = time.time()
    s.sendall(b'{"jsonrpc":"2.0","id":%d,"method":"ecp/ping"}\n' % k)
    while "method" in json.loads(f.readline()):
        pass
    worst = max(worst, time.time() - t)
    if sys.stdin in __import__("select").select([sys.stdin], [], [], 0.002)[0]:
        break
print(worst)
"""


def worst_ping_during(srv, client, msg, pinger_script=None):
    """Sends msg on client and, while it is being answered, pings from a second
    process over and over (its own interpreter: this one is busy reading the
    answer); returns (the answer, the slowest ping in seconds)."""
    pinger = subprocess.Popen([sys.executable, "-c", pinger_script or PINGER, srv.path], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE)
    assert pinger.stdout.readline().strip() == b"ready"
    time.sleep(0.02)
    answer = client.call(msg)
    out, _ = pinger.communicate(b"stop\n", timeout=60)
    return answer, float(out)


class StdioTests(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ecpd-transport-")

    def test_newline_framing_round_trip(self):
        s = Stdio(self.tmp)
        self.assertEqual(s.call(req(1, "ecp/ping", {"x": "é😀"})),
                         {"jsonrpc": "2.0", "id": 1, "result": {"x": "é😀"}})
        self.assertEqual(s.call(req("abc", "ecp/ping", [1])), {"jsonrpc": "2.0", "id": "abc", "result": [1]})
        self.assertEqual(s.close(), 0)

    def test_content_length_framing_round_trip(self):
        s = Stdio(self.tmp)
        s.send(cl(req(1, "ecp/ping", {"a": 1})) + b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n" +
               cl(req(2, "ecp/ping", {"b": 2})))
        # the second message carries an extra header before its length: still one framing
        self.assertEqual(s.recv()["result"], {"a": 1})
        self.assertEqual(s.recv()["result"], {"b": 2})
        self.assertEqual(s.close(), 0)

    def test_replies_use_the_peers_framing(self):
        s = Stdio(self.tmp)
        s.send(cl(req(1, "ecp/ping")))
        head = s.p.stdout.read1(15)
        self.assertEqual(head[:15], b"Content-Length:")
        s.close()

    def test_exit_codes(self):
        s = Stdio(self.tmp)
        self.assertEqual(s.call(req(1, "shutdown")), {"jsonrpc": "2.0", "id": 1, "result": None})
        self.assertEqual(s.call(req(2, "ecp/ping"))["error"],
                         {"code": -32002, "message": "Server is shutting down"})
        t = time.time()
        s.send(nl({"jsonrpc": "2.0", "method": "exit"}))
        self.assertEqual(s.p.wait(5), 0)
        self.assertLess(time.time() - t, 1.0)
        s.close()

        s = Stdio(self.tmp)
        s.send(nl({"jsonrpc": "2.0", "method": "exit"}))
        self.assertEqual(s.p.wait(5), 1)
        s.close()

    def test_stdin_eof_exits_cleanly_and_flushes(self):
        s = Stdio(self.tmp)
        s.send(nl(req(1, "ecp/ping", {"last": True})))
        t = time.time()
        s.p.stdin.close()
        self.assertEqual(s.recv()["result"], {"last": True})
        self.assertEqual(s.p.wait(5), 0)
        self.assertLess(time.time() - t, 1.0)
        s.p.stdout.close()
        s.p.stderr.close()

    def test_stdin_eof_is_seen_while_the_output_is_backed_up(self):
        # answers past the pause bound that nobody reads: the server stops acting on input, not reading it
        s = Stdio(self.tmp)
        pad = "x" * (950 << 10)
        for i in range(9):
            s.send(nl(req(i, "ecp/ping", [pad])))
        time.sleep(0.5)
        t = time.time()
        s.p.stdin.close()
        self.assertEqual(s.p.wait(10), 0)
        self.assertLess(time.time() - t, 2.0)
        s.p.stdout.close()
        s.p.stderr.close()

    def test_bad_input_keeps_the_connection(self):
        s = Stdio(self.tmp, "--max-message-bytes", "65536")
        self.assertEqual(s.call(req(1, "ecp/ping"))["id"], 1)  # newline framing from here on
        s.send(b"\x00\x01garbage\xff\n")
        self.assertEqual(s.recv()["error"]["code"], -32700)
        s.send(b'{"jsonrpc":"2.0","id":2,"method":"ecp/ping",\n')
        self.assertEqual(s.recv()["error"], {"code": -32700, "message": "Parse error: incomplete JSON text"})
        s.send(b'{"jsonrpc":"2.0","id":3,"method":"ecp/ping","params":{"s":"\xc3\x28"}}\n')
        self.assertEqual(s.recv()["result"], {"s": "\ufffd("})
        s.send(b'{"jsonrpc":"2.0","id":4,"method":"ecp/ping","params":' + b"[" * 5000 + b"]" * 5000 + b"}\n")
        self.assertEqual(s.recv()["error"]["code"], -32700)
        self.assertEqual(s.call(req(5, "no/such"))["error"], {"code": -32601, "message": "Method not found: no/such"})
        self.assertEqual(s.call(req(6, "notifications/subscribe", {}))["error"],
                         {"code": -32602, "message": "events: required array"})
        big = json.dumps(req(7, "ecp/ping", {"pad": "x" * 100000})).encode() + b"\n"
        s.send(big)
        err = s.recv()
        self.assertEqual(err["error"]["code"], -32600)
        self.assertIn("exceeds the limit of 65536 bytes", err["error"]["message"])
        self.assertEqual(s.call(req(8, "ecp/ping", [8])), {"jsonrpc": "2.0", "id": 8, "result": [8]})
        self.assertEqual(s.close(), 0)

    def test_batch_of_ten_thousand(self):
        s = Stdio(self.tmp)
        batch = [req(i, "ecp/ping", [i]) for i in range(10000)]
        s.send((json.dumps(batch) + "\n").encode())
        replies = s.recv()
        self.assertEqual(len(replies), 10000)
        self.assertEqual(sorted(r["id"] for r in replies), list(range(10000)))
        self.assertTrue(all(r["result"] == [r["id"]] for r in replies))
        s.close()

    def test_huge_content_length_is_refused_and_skipped(self):
        s = Stdio(self.tmp, "--max-message-bytes", "65536")
        body = b"{" + b" " * 199998 + b"}"
        s.send(b"Content-Length: %d\r\n\r\n" % len(body))
        for i in range(0, len(body), 7000):  # the oversized body arrives in pieces
            s.send(body[i:i + 7000])
        err = s.recv()
        self.assertEqual(err["id"], None)
        self.assertEqual(err["error"]["code"], -32600)
        self.assertEqual(s.call(req(1, "ecp/ping", [1]), cl), {"jsonrpc": "2.0", "id": 1, "result": [1]})
        s.close()

    def test_unparseable_header_closes_the_connection(self):
        s = Stdio(self.tmp)
        s.send(b"Content-Length: lots\r\n\r\n{}")
        # stdio has one client and it spoke garbage: the server ends, as a failure, and says why
        self.assertEqual(s.p.wait(5), 1)
        self.assertIn(b"unparseable message header", s.p.stderr.read())
        s.close()

    def test_header_without_body_then_eof(self):
        s = Stdio(self.tmp)
        s.send(b"Content-Length: 100\r\n\r\n")
        time.sleep(0.1)
        self.assertIsNone(s.p.poll())  # waits for the body
        self.assertEqual(s.close(), 0)

    def test_process_id_watch(self):
        sleeper = subprocess.Popen(["sleep", "60"])
        s = Stdio(self.tmp)
        self.assertEqual(s.call(req(1, "initialize", {"processId": sleeper.pid}))["result"]["serverInfo"]["name"], "ecpd")
        sleeper.kill()
        sleeper.wait()
        self.assertEqual(s.p.wait(5), 0)
        s.close()

    def test_a_big_message_costs_little_more_than_its_size(self):
        s = Stdio(self.tmp)
        self.assertEqual(s.call(req(0, "ecp/ping"))["id"], 0)
        before = peak_rss_kb(s.p.pid)
        size = 50 << 20
        item = '"' + "v" * 998 + '",'
        body = ('{"jsonrpc":"2.0","id":1,"method":"ecp/methods","params":{"namespace":"ecp","pad":['
                + item * (size // len(item)) + '1]}}\n').encode()
        s.send(body)
        self.assertEqual(s.recv()["id"], 1)
        grown = (peak_rss_kb(s.p.pid) - before) / 1024
        print("\n  a 50 MB message raised the peak by %.0f MB (%.1fx)" % (grown, grown / 50), file=sys.stderr)
        # the buffer it arrives in, then that same buffer handed to the parser, and its tokens
        quarantine = 40 if "quarantine_size_mb" in os.environ.get("ASAN_OPTIONS", "") else 0  # freed, held by ASan
        self.assertLess(grown, 80 + quarantine, "a 50 MB message raised the peak by %.0f MB" % grown)
        s.close()

    def test_a_client_that_stops_reading_during_a_terminal_flood_is_waited_for(self):
        # On stdio the one client is the server's reason to live: dropping it
        # for being slow would end the server and every terminal. The
        # terminals wait for it instead, their programs blocked in their writes.
        s = Stdio(self.tmp)
        self.assertEqual(s.call(req(0, "ecp/ping"))["id"], 0)
        start_rss = rss_kb(s.p.pid)

        def until(id_):
            """Reads up to the response to id_; returns it and the output notifications seen."""
            outputs = 0
            while True:
                m = s.recv()
                if m.get("id") == id_:
                    return m, outputs
                outputs += m.get("method") == "terminal/output"

        s.send(nl(req(1, "terminal/create", {"shell": "yes"})))
        flood = until(1)[0]["result"]["terminalId"]
        deadline = time.time() + 0.5
        while time.time() < deadline:  # read the flood for a while, then stop
            s.recv()
        time.sleep(2)
        self.assertIsNone(s.p.poll(), "the server ended while its client was not reading")
        s.send(nl(req(2, "ecp/ping", [2])))
        answer, outputs = until(2)
        self.assertEqual(answer["result"], [2])
        self.assertGreater(outputs, 0)
        grown_mb = (peak_rss_kb(s.p.pid) - start_rss) / 1024
        print("\n  a terminal flood with a client that paused 2 s: peak %.0f MB above the start" % grown_mb,
              file=sys.stderr)
        # the connection's queue (8 MiB before the terminals are held), a terminal's backlog (4 MiB) and the
        # messages being rendered; ASan's quarantine holds on to what was freed
        quarantine = 40 if "quarantine_size_mb" in os.environ.get("ASAN_OPTIONS", "") else 0
        self.assertLess(grown_mb, 60 + quarantine, "server memory grew by %.0f MB" % grown_mb)
        # the flood goes on once the client reads again, and the terminals still work
        s.send(nl(req(3, "terminal/isRunning", {"terminalId": flood})))
        answer, outputs = until(3)
        self.assertTrue(answer["result"]["running"])
        s.send(nl(req(4, "terminal/close", {"terminalId": flood})))
        until(4)
        s.send(nl(req(5, "terminal/create", {"shell": "/bin/sh"})))
        shell = until(5)[0]["result"]["terminalId"]
        s.send(nl(req(6, "terminal/write", {"terminalId": shell, "data": "echo sum-$((6*7))\n"})))
        seen = ""
        deadline = time.time() + 10
        while "sum-42" not in seen and time.time() < deadline:
            m = s.recv()
            if m.get("method") == "terminal/output" and m["params"]["terminalId"] == shell:
                seen += m["params"]["data"]
        self.assertIn("sum-42", seen)
        # and a server whose client goes while the terminals are held for it ends cleanly
        s.send(nl(req(7, "terminal/create", {"shell": "yes"})))
        until(7)
        time.sleep(1)
        s.p.stdin.close()
        s.p.stdout.close()
        code = s.p.wait(10)
        errors = s.p.stderr.read().decode()
        s.p.stderr.close()
        self.assertNotIn("Sanitizer", errors)
        self.assertIn(code, (0, 1), errors)

    def test_a_regex_that_backtracks_without_end_is_bounded(self):
        base = os.path.join(self.tmp, "tree")
        os.mkdir(base)
        with open(os.path.join(base, "evil.txt"), "w") as f:
            f.write(("a" * 40 + "!\n") * 200)
        with open(os.path.join(base, "good.txt"), "w") as f:
            f.write("aaa\n")
        s = Stdio(self.tmp)
        t = time.time()
        r = s.call(req(1, "file/grep", {"pattern": "^(a+)+$", "regex": True, "baseUri": "file://" + base}))
        took = time.time() - t
        print("\n  catastrophic regex over 200 lines: %.3f s" % took, file=sys.stderr)
        self.assertEqual([m["uri"].rsplit("/", 1)[1] for m in r["result"]["matches"]], ["good.txt"])
        self.assertLess(took, 1.5)  # PCRE2's default limits took 4 s here
        s.close()

    def test_process_id_of_a_process_already_gone(self):
        sleeper = subprocess.Popen(["true"])
        sleeper.wait()
        s = Stdio(self.tmp)
        self.assertEqual(s.call(req(1, "initialize", {"processId": sleeper.pid}))["result"]["serverInfo"]["name"], "ecpd")
        self.assertEqual(s.p.wait(5), 0)
        s.close()

    def test_the_data_dir_fallback_under_tmp_is_private(self):
        fallback = "/tmp/ecpd-%d" % os.getuid()
        if os.path.lexists(fallback) and (os.lstat(fallback).st_uid != os.getuid()
                                          or stat.S_IMODE(os.lstat(fallback).st_mode) & 0o022):
            self.skipTest("%s is not ours to test with" % fallback)
        env = {k: v for k, v in os.environ.items() if k not in ("HOME", "XDG_DATA_HOME")}
        p = subprocess.run([ECPD, "--stdio"], input=nl(req(1, "ecp/ping")), capture_output=True, timeout=10, env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        st = os.lstat(fallback)
        self.assertTrue(stat.S_ISDIR(st.st_mode))
        self.assertEqual(st.st_uid, os.getuid())
        self.assertEqual(stat.S_IMODE(st.st_mode) & 0o077, 0)


class SocketPlaceTests(unittest.TestCase):
    """Where the socket goes must be private before anything listens there."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ecpd-transport-")

    def start(self, directory, *args):
        return subprocess.run([ECPD, "--socket", os.path.join(directory, "ecpd.sock"),
                               "--data-dir", os.path.join(self.tmp, "data"), *args],
                              stdin=subprocess.DEVNULL, capture_output=True, timeout=10)

    def test_a_directory_others_can_write_is_refused(self):
        d = os.path.join(self.tmp, "open")
        os.mkdir(d)
        for mode in (0o777, 0o770, 0o702):
            os.chmod(d, mode)
            p = self.start(d)
            self.assertEqual(p.returncode, 1)
            self.assertIn(b"writable by group or others", p.stderr)
            self.assertFalse(os.path.exists(os.path.join(d, "ecpd.sock")))

    def test_a_symbolic_link_is_refused(self):
        real = os.path.join(self.tmp, "real")
        os.mkdir(real, 0o700)
        link = os.path.join(self.tmp, "link")
        os.symlink(real, link)
        p = self.start(link)
        self.assertEqual(p.returncode, 1)
        self.assertIn(b"symbolic link", p.stderr)

    def test_a_directory_of_another_user_is_refused(self):
        if os.getuid() != 0:
            self.skipTest("needs root to make a directory of another user")
        d = os.path.join(self.tmp, "theirs")
        os.mkdir(d, 0o700)
        os.chown(d, 65534, 65534)
        p = self.start(d)
        self.assertEqual(p.returncode, 1)
        self.assertIn(b"belongs to another user", p.stderr)

    def test_sighup_and_sigint_stop_the_server_and_remove_the_socket(self):
        for sig in (signal.SIGHUP, signal.SIGINT):
            srv = SocketServer(self.tmp)
            srv.p.send_signal(sig)
            self.assertEqual(srv.p.wait(5), 0, sig)
            srv.p.stderr.close()
            self.assertFalse(os.path.exists(srv.path), sig)

    def test_connections_beyond_the_limit_are_refused_clearly(self):
        srv = SocketServer(self.tmp, "--max-connections", "2")

        def admitted():
            # a client that just left still counts until the server has seen it go
            deadline = time.time() + 5
            while True:
                c = Client(srv.connect())
                try:
                    if "result" in c.call(req(0, "ecp/ping")):
                        return c
                except OSError:
                    pass
                c.s.close()
                self.assertLess(time.time(), deadline, "a free place was never given")
                time.sleep(0.05)

        try:
            a, b = admitted(), admitted()
            third = Client(srv.connect())
            refusal = third.r.message()
            self.assertEqual(refusal["error"]["code"], -32000)
            self.assertIn("Too many connections", refusal["error"]["message"])
            self.assertEqual(third.s.recv(100), b"")
            self.assertEqual(b.call(req(1, "ecp/ping", [2]))["result"], [2])
            a.s.close()
            c = admitted()
            self.assertEqual(c.call(req(2, "ecp/ping", [3]))["result"], [3])
            b.s.close()
            c.s.close()
        finally:
            self.assertEqual(srv.stop(), 0)

    def test_the_connection_limit_setting_applies_unless_the_flag_is_given(self):
        def admitted(srv):
            deadline = time.time() + 5
            while True:
                c = Client(srv.connect())
                try:
                    if "result" in c.call(req(0, "ecp/ping")):
                        return c
                except OSError:
                    pass
                c.s.close()
                self.assertLess(time.time(), deadline, "a free place was never given")
                time.sleep(0.05)

        def refused(srv):
            c = Client(srv.connect())
            m = c.r.message()
            c.s.close()
            return "error" in m and "at most 1" in m["error"]["message"]

        srv = SocketServer(self.tmp)
        try:
            a = admitted(srv)
            bad = a.call(req(1, "config/set", {"key": "server.maxConnections", "value": 0}))
            self.assertEqual(bad["error"]["code"], -32301)
            ok = a.call(req(2, "config/set", {"key": "server.maxConnections", "value": 1}))
            self.assertEqual(ok["result"], {"success": True})
            self.assertTrue(refused(srv), "the setting applies to the next connection")
            self.assertEqual(a.call(req(3, "ecp/ping", [1]))["result"], [1])
            a.s.close()
        finally:
            self.assertEqual(srv.stop(), 0)
        # the setting persisted; --max-connections wins over it
        srv = SocketServer(self.tmp, "--max-connections", "2")
        try:
            a, b = admitted(srv), admitted(srv)
            self.assertEqual(b.call(req(4, "ecp/ping", [2]))["result"], [2])
            a.s.close()
            b.s.close()
        finally:
            self.assertEqual(srv.stop(), 0)

    def test_max_connections_needs_a_number(self):
        p = subprocess.run([ECPD, "--max-connections", "0"], capture_output=True, timeout=5)
        self.assertEqual(p.returncode, 2)
        self.assertIn(b"--max-connections", p.stderr)


class SocketTests(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ecpd-transport-")
        self.srv = SocketServer(self.tmp)

    def tearDown(self):
        self.srv.stop()

    def test_permissions(self):
        self.assertEqual(stat.S_IMODE(os.stat(self.srv.dir).st_mode), 0o700)
        self.assertEqual(stat.S_IMODE(os.stat(self.srv.path).st_mode), 0o600)
        self.assertTrue(stat.S_ISSOCK(os.stat(self.srv.path).st_mode))

    def test_many_clients_at_once(self):
        clients = [Client(self.srv.connect()) for _ in range(8)]
        errors = []

        def run(i, c):
            try:
                framing = cl if i % 2 else nl
                for k in range(200):
                    r = c.call(req(k, "ecp/ping", {"client": i, "k": k}), framing)
                    if r != {"jsonrpc": "2.0", "id": k, "result": {"client": i, "k": k}}:
                        errors.append(r)
            except Exception as e:  # noqa: BLE001
                errors.append(repr(e))

        threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        self.assertEqual(errors, [])
        for c in clients:
            c.s.close()

    def test_disconnect_mid_request_does_not_disturb_others(self):
        other = Client(self.srv.connect())
        for _ in range(20):
            s = self.srv.connect()
            s.sendall(b"".join(nl(req(i, "ecp/ping", {"pad": "y" * 1000})) for i in range(200)))
            s.close()
        self.assertEqual(other.call(req(1, "ecp/ping", [1])), {"jsonrpc": "2.0", "id": 1, "result": [1]})

    def test_bad_header_closes_only_that_client(self):
        good = Client(self.srv.connect())
        self.assertEqual(good.call(req(1, "ecp/ping"))["id"], 1)
        bad = self.srv.connect()
        bad.sendall(b"Content-Length: ???\r\n\r\n")
        self.assertEqual(bad.recv(100), b"")  # closed by the server
        self.assertEqual(good.call(req(2, "ecp/ping"))["id"], 2)

    def test_a_stalled_client_is_dropped_so_the_others_terminals_go_on(self):
        # Terminals wait for a slow reader; on a shared server, a client that
        # reads nothing at all would hold every terminal for everyone, so
        # past the stall timeout it is dropped (the only client never is).
        self.srv.stop()
        self.srv = SocketServer(self.tmp, "--stall-timeout", "2")
        stuck = self.srv.connect()
        stuck.sendall(nl(req(0, "ecp/ping")))  # it has spoken: notifications reach it; it never reads
        reader = Client(self.srv.connect())
        tid = reader.call(req(1, "terminal/create", {"shell": "yes"}))["result"]["terminalId"]
        seen = []
        deadline = time.time() + 12
        while time.time() < deadline:
            m = reader.r.message()
            if m.get("method") == "terminal/output" and m["params"]["terminalId"] == tid:
                seen.append(time.time())
        longest_gap = max(b - a for a, b in zip(seen, seen[1:]))
        self.assertGreater(longest_gap, 1.0, "the terminal was never held for the stalled client")
        self.assertGreater(seen[-1], deadline - 1.0, "the terminal stayed held after the stall timeout")
        reader.call(req(2, "terminal/close", {"terminalId": tid}))
        self.srv.p.send_signal(signal.SIGTERM)
        self.srv.p.wait(10)
        log = self.srv.p.stderr.read().decode()
        self.assertIn("has not read its output for too long", log)
        stuck.close()
        reader.s.close()

    def test_a_client_that_never_reads_is_bounded(self):
        stuck = self.srv.connect()
        stuck.settimeout(1.0)
        pad = "z" * (1 << 20)
        sent = 0
        start_rss = rss_kb(self.srv.p.pid)
        # flood 1 MiB pings and read nothing: the server must stop reading us,
        # so our writes stall once the kernel's buffers are full
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                stuck.sendall(nl(req(sent, "ecp/ping", {"pad": pad})))
                sent += 1
            except socket.timeout:
                break
        self.assertLess(sent, 200, "the server kept reading from a client that does not read")
        probe = Client(self.srv.connect())
        t = time.time()
        self.assertEqual(probe.call(req(1, "ecp/ping", [1]))["result"], [1])
        self.assertLess(time.time() - t, 0.5)
        grown_mb = (rss_kb(self.srv.p.pid) - start_rss) / 1024
        self.assertLess(grown_mb, 150, "server memory grew by %.0f MB" % grown_mb)
        stuck.close()

    def test_clients_that_never_read_others_notifications_are_bounded(self):
        path = os.path.join(self.tmp, "busy.txt")
        with open(path, "w") as f:
            f.write("start\n")
        stuck = []
        for _ in range(3):  # they speak once, so their framing is known, then never read
            s = self.srv.connect()
            s.sendall(nl(req(1, "notifications/subscribe", {"events": ["*"]})))
            stuck.append(s)
        writer = Client(self.srv.connect())
        doc = writer.call(req(1, "document/open", {"uri": "file://" + path}))["result"]["documentId"]
        start_rss = rss_kb(self.srv.p.pid)
        chunk = "x" * (1 << 20)
        for i in range(60):  # 60 MiB of change events for each stuck client
            r = writer.call(req(2 + i, "document/insert",
                                {"documentId": doc, "position": {"line": 0, "column": 0}, "text": chunk}))
            self.assertTrue(r["result"]["success"])
        # the writer's own document now holds 60 MiB; the stuck clients may add at most ~16 MiB each
        grown_mb = (rss_kb(self.srv.p.pid) - start_rss) / 1024
        print("\n  3 unread clients, 60 MiB of events each: server grew %.0f MB" % grown_mb, file=sys.stderr)
        self.assertLess(grown_mb, 200, "server memory grew by %.0f MB" % grown_mb)  # the 60 MiB document and its history, plus ~16 MiB a client
        for s in stuck:  # dropped: what is left to read ends with the close
            s.settimeout(10)
            total = 0
            while True:
                d = s.recv(1 << 20)
                if not d:
                    break
                total += len(d)
            self.assertLess(total, 40 << 20)
            s.close()
        self.assertEqual(writer.call(req(100, "ecp/ping", [1]))["result"], [1])

    def test_the_content_of_a_huge_document_stalls_nobody(self):
        a = Client(self.srv.connect())
        size = 64 << 20
        # quotes, tabs and newlines: the answer must escape them, which is the slow part
        text = ('say "\tq\\" ' * 5 + "\n") * (size // 56)
        doc = a.call(req(1, "document/open", {"uri": "untitled:huge", "content": text}))["result"]["documentId"]
        t = time.time()
        r, worst = worst_ping_during(self.srv, a, req(2, "document/content", {"documentId": doc}))
        print("\n  document/content of %d MB: %.2f s, slowest ping %.0f ms" % (len(text) >> 20, time.time() - t,
                                                                            worst * 1000), file=sys.stderr)
        self.assertEqual(len(r["result"]["content"]), len(text))
        self.assertTrue(r["result"]["content"] == text)
        self.assertEqual(r["result"]["lineCount"], text.count("\n") + 1)
        # written on the loop, the answer stalled others some 600 ms here (more on a loaded machine); from a
        # snapshot on the pool ~200 ms, what was left being two copies of the answer on the loop; now the
        # answer made on the pool is written from where it lies: ~15 ms
        self.assertLess(worst, 0.25 * SANITIZED)

    def test_a_word_inside_a_huge_token_stalls_nobody(self):
        a = Client(self.srv.connect())
        doc = a.call(req(1, "document/open", {"uri": "untitled:token", "content": "a" * (30 << 20)}))
        doc = doc["result"]["documentId"]
        t = time.time()
        r, worst = worst_ping_during(self.srv, a, req(2, "document/wordAtPosition",
                                                       {"documentId": doc, "position": {"line": 0, "column": 15 << 20}}))
        took = time.time() - t
        print("\n  wordAtPosition in a 30 MB token: %.3f s, slowest ping %.1f ms" % (took, worst * 1000),
              file=sys.stderr)
        self.assertIsNone(r["result"])  # no word that long
        self.assertLess(worst, 0.5)  # it took 2.3 s when it read the token a byte at a time
        r = a.call(req(3, "document/wordAtPosition", {"documentId": doc, "position": {"line": 0, "column": 2}}))
        self.assertIsNone(r["result"])
        a.call(req(4, "document/setContent", {"documentId": doc, "content": "x" * 4096 + " " + "y" * 4097}))
        r = a.call(req(5, "document/wordAtPosition", {"documentId": doc, "position": {"line": 0, "column": 4095}}))
        self.assertEqual(r["result"]["range"]["start"]["column"], 0)  # a word right at the bound is still one
        r = a.call(req(6, "document/wordAtPosition", {"documentId": doc, "position": {"line": 0, "column": 4097}}))
        self.assertIsNone(r["result"])

    def test_second_server_on_the_same_path_is_refused(self):
        p = subprocess.run([ECPD, "--socket", self.srv.path, "--data-dir", os.path.join(self.tmp, "d2")],
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=5)
        self.assertEqual(p.returncode, 1)
        self.assertIn(b"another server is already listening", p.stderr)

    def test_shutdown_and_exit_end_only_that_clients_session(self):
        a, b = Client(self.srv.connect()), Client(self.srv.connect())
        self.assertEqual(a.call(req(1, "shutdown")), {"jsonrpc": "2.0", "id": 1, "result": None})
        self.assertEqual(a.call(req(2, "ecp/ping"))["error"]["code"], -32002)
        self.assertEqual(b.call(req(1, "ecp/ping", [1]))["result"], [1])
        a.s.sendall(nl({"jsonrpc": "2.0", "method": "exit"}))
        self.assertEqual(a.s.recv(100), b"")  # that client's session is over
        self.assertEqual(b.call(req(2, "ecp/ping", [2]))["result"], [2])
        self.assertIsNone(self.srv.p.poll())
        c = Client(self.srv.connect())
        self.assertEqual(c.call(req(1, "ecp/ping", [3]))["result"], [3])
        # exit as a request is answered before the connection closes
        self.assertEqual(c.call(req(2, "exit")), {"jsonrpc": "2.0", "id": 2, "result": None})
        self.assertEqual(c.s.recv(100), b"")
        self.assertEqual(b.call(req(3, "ecp/ping", [4]))["result"], [4])

    def test_process_id_watches_only_that_client(self):
        sleeper = subprocess.Popen(["sleep", "60"])
        a, b = Client(self.srv.connect()), Client(self.srv.connect())
        self.assertEqual(a.call(req(1, "initialize", {"processId": sleeper.pid}))["result"]["serverInfo"]["name"],
                         "ecpd")
        t = time.time()
        sleeper.kill()
        sleeper.wait()
        a.s.settimeout(5)
        self.assertEqual(a.s.recv(100), b"")
        self.assertLess(time.time() - t, 0.5, "the watch noticed late: it should not poll")
        self.assertEqual(b.call(req(1, "ecp/ping", [1]))["result"], [1])
        self.assertIsNone(self.srv.p.poll())

    def test_workspace_root_does_not_move_a_shared_server(self):
        self.srv.stop()
        ws = os.path.join(self.tmp, "ws")
        os.mkdir(ws)
        self.srv = SocketServer(self.tmp, "--workspace", ws)
        a, b = Client(self.srv.connect()), Client(self.srv.connect())
        other = os.path.join(self.tmp, "elsewhere")
        os.mkdir(other)
        self.assertIn("result", a.call(req(1, "initialize", {"workspaceRoot": other})))
        self.assertIn("result", b.call(req(1, "session/save", {"name": "after"})))
        sessions = b.call(req(2, "session/list"))["result"]["sessions"]
        roots = [x["workspaceRoot"] for x in sessions]
        self.assertTrue(roots)
        self.assertNotIn(other, roots)

    def test_ecp_stop_ends_the_server(self):
        a, b = Client(self.srv.connect()), Client(self.srv.connect())
        self.assertEqual(b.call(req(1, "ecp/ping", [1]))["result"], [1])
        self.assertEqual(a.call(req(1, "ecp/stop")), {"jsonrpc": "2.0", "id": 1, "result": None})
        self.assertEqual(self.srv.p.wait(5), 0)
        self.assertFalse(os.path.exists(self.srv.path))

    def test_ecpctl_stop(self):
        out = subprocess.run([ECPCTL, "--socket", self.srv.path, "--stop"], capture_output=True, timeout=10)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(self.srv.p.wait(5), 0)
        self.assertFalse(os.path.exists(self.srv.path))
        out = subprocess.run([ECPCTL, "--socket", self.srv.path, "--stop"], capture_output=True, timeout=10)
        self.assertEqual(out.returncode, 2)  # nothing to stop: a connection problem
        out = subprocess.run([ECPCTL, "--stop", "ecp/ping"], capture_output=True, timeout=10)
        self.assertEqual(out.returncode, 2)

    def test_ecpctl_refuses_a_server_of_another_user(self):
        if os.getuid() != 0:
            self.skipTest("needs root to listen as another user")
        d = os.path.join(self.tmp, "impostor")
        os.mkdir(d, 0o755)
        path = os.path.join(d, "s.sock")
        code = ("import socket,os\n"
                "os.setgid(65534); os.setuid(65534)\n"
                "s=socket.socket(socket.AF_UNIX); s.bind(%r); os.chmod(%r, 0o666); s.listen(1)\n"
                "s.settimeout(10); print('ready', flush=True)\n"
                "c,_=s.accept(); c.settimeout(3)\n"
                "try: d=c.recv(100)\n"
                "except Exception: d=b''\n"
                "print(len(d), flush=True)\n") % (path, path)
        os.chmod(d, 0o777)
        os.chmod(self.tmp, 0o711)  # the impostor must reach its directory
        fake = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        try:
            self.assertEqual(fake.stdout.readline().strip(), b"ready")
            out = subprocess.run([ECPCTL, "--socket", path, "ecp/ping", "{\"secret\":1}"], capture_output=True,
                                 timeout=10)
            self.assertEqual(out.returncode, 2)
            self.assertIn(b"another user", out.stderr)
            self.assertEqual(fake.communicate(timeout=10)[0].strip(), b"0")  # it received nothing
        finally:
            if fake.poll() is None:
                fake.kill()
                fake.wait()

    def test_sigterm_removes_the_socket(self):
        self.assertEqual(self.srv.stop(), 0)
        self.assertFalse(os.path.exists(self.srv.path))
        self.srv = SocketServer(self.tmp)  # a stale socket file would also be replaced

    def test_stale_socket_is_replaced(self):
        self.srv.p.kill()
        self.srv.p.wait()
        self.assertTrue(os.path.exists(self.srv.path))
        self.srv = SocketServer(self.tmp)
        c = Client(self.srv.connect())
        self.assertEqual(c.call(req(1, "ecp/ping", [1]))["result"], [1])

    def test_two_socket_clients_edit_one_document(self):
        path = os.path.join(self.tmp, "shared.txt")
        with open(path, "w") as f:
            f.write("hello\nworld\n")
        a, b = Client(self.srv.connect()), Client(self.srv.connect())
        uri = "file://" + path
        opened = a.call(req(1, "document/open", {"uri": uri}))
        doc = opened["result"]["documentId"]
        # b opening the same file gets the same document, and no second didOpen
        self.assertEqual(b.call(req(1, "document/open", {"uri": uri}))["result"]["documentId"], doc)

        def until_response(client, id_):
            notes = []
            while True:
                m = client.r.message()
                if m.get("id") == id_ and "method" not in m:
                    return m, notes
                notes.append(m)

        a.s.sendall(nl(req(2, "document/insert", {"documentId": doc, "position": {"line": 0, "column": 5}, "text": ", A"})))
        reply, notes = until_response(a, 2)
        self.assertTrue(reply["result"]["success"])
        self.assertIn("document/didChange", [n["method"] for n in notes])  # before the response
        change = b.r.message()
        while change.get("method") != "document/didChange":
            change = b.r.message()
        self.assertEqual(change["params"]["changes"],
                         [{"range": {"start": {"line": 0, "column": 5}, "end": {"line": 0, "column": 5}},
                           "rangeLength": 0, "text": ", A"}])
        b.s.sendall(nl(req(2, "document/insert", {"documentId": doc, "position": {"line": 1, "column": 0}, "text": "B: "})))
        until_response(b, 2)
        change = a.r.message()
        while change.get("method") != "document/didChange":
            change = a.r.message()
        self.assertEqual(change["params"]["changes"][0]["text"], "B: ")
        a.s.sendall(nl(req(3, "document/content", {"documentId": doc})))
        self.assertEqual(until_response(a, 3)[0]["result"]["content"], "hello, A\nB: world\n")
        b.s.sendall(nl(req(3, "document/content", {"documentId": doc})))
        self.assertEqual(until_response(b, 3)[0]["result"]["content"], "hello, A\nB: world\n")
        # a leaving does not close the document for b
        a.s.close()
        b.s.sendall(nl(req(4, "document/version", {"documentId": doc})))
        self.assertIn("version", until_response(b, 4)[0]["result"])

    def test_ecpctl(self):
        out = subprocess.run([ECPCTL, "--socket", self.srv.path, "ecp/ping", '{"hi":1}'],
                             capture_output=True, timeout=10)
        self.assertEqual(out.returncode, 0)
        self.assertEqual(json.loads(out.stdout), {"jsonrpc": "2.0", "id": 1, "result": {"hi": 1}})
        out = subprocess.run([ECPCTL, "--socket", self.srv.path, "no/such"], capture_output=True, timeout=10)
        self.assertEqual(out.returncode, 1)
        self.assertEqual(json.loads(out.stdout)["error"]["code"], -32601)
        out = subprocess.run([ECPCTL, "--socket", self.srv.path], input=b'ecp/ping [1]\n{"jsonrpc":"2.0","id":9,"method":"ecp/ping"}\n',
                             capture_output=True, timeout=10)
        lines = [json.loads(l) for l in out.stdout.splitlines()]
        self.assertEqual([l["id"] for l in lines], [1, 9])
        out = subprocess.run([ECPCTL, "--socket", os.path.join(self.tmp, "nope.sock"), "ecp/ping"], capture_output=True, timeout=10)
        self.assertEqual(out.returncode, 2)
        self.assertIn(b"cannot connect", out.stderr)

    def test_ecpctl_methods(self):
        listed = subprocess.run([ECPCTL, "--socket", self.srv.path, "ecp/methods"], capture_output=True, timeout=10)
        methods = json.loads(listed.stdout)["result"]["methods"]
        out = subprocess.run([ECPCTL, "--socket", self.srv.path, "--methods"], capture_output=True, timeout=10)
        self.assertEqual(out.returncode, 0, out.stderr)
        lines = out.stdout.decode().splitlines()
        # one line per method, in the server's order: name (aligned), params, summary
        self.assertEqual(len(lines), len(methods))
        width = max(len(m["name"]) for m in methods)
        for line, m in zip(lines, methods):
            self.assertTrue(m["summary"] and m["params"], m)
            self.assertEqual(line, "%-*s  %s -- %s" % (width, m["name"], m["params"], m["summary"]))
        out = subprocess.run([ECPCTL, "--socket", self.srv.path, "--methods", "file"], capture_output=True, timeout=10)
        self.assertEqual(out.returncode, 0, out.stderr)
        lines = out.stdout.decode().splitlines()
        self.assertEqual(len(lines), sum(m["name"].startswith("file/") for m in methods))
        # names are padded to the longest of the namespace, file/getBasename
        self.assertTrue(lines[0].startswith("file/read" + " " * 9 + "{uri: string, encoding?: string} -- "), lines[0])
        self.assertTrue(all(l.startswith("file/") for l in lines))
        out = subprocess.run([ECPCTL, "--socket", self.srv.path, "--methods", "nope"], capture_output=True, timeout=10)
        self.assertEqual((out.returncode, out.stdout), (1, b""))
        self.assertIn(b'no methods in namespace "nope"', out.stderr)

    def test_ecpctl_spawn(self):
        env = dict(os.environ, XDG_DATA_HOME=os.path.join(self.tmp, "xdg"), ECPD=ECPD)
        out = subprocess.run([ECPCTL, "--spawn", "ecp/ping", "[42]"], capture_output=True, timeout=10, env=env)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(json.loads(out.stdout)["result"], [42])
        out = subprocess.run([ECPCTL, "--spawn", "--methods", "ecp"], capture_output=True, timeout=10, env=env)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout.decode().splitlines(),
                         ["ecp/methods  {namespace?: string} -- "
                          "Every method this server routes, with its summary and params, optionally of one namespace",
                          "ecp/ping     any -- Echo params back (null without them): a latency probe",
                          "ecp/stop     {} -- Stop the server for every client "
                          "(a shared server's exit ends only the caller's session)",
                          "ecp/whoami   {} -- "
                          "This connection's clientId (the one initialize answered) and the name it gave in clientInfo"])
        # a server that cannot start answers nothing (or takes no request): a connection problem
        out = subprocess.run([ECPCTL, "--spawn", "ecp/ping"], capture_output=True, timeout=10,
                             env=dict(env, ECPD=os.path.join(self.tmp, "no-such-ecpd")))
        self.assertEqual(out.returncode, 2)
        self.assertIn(b"the server closed the connection", out.stderr)
        # requests from stdin, and none at all: still a server that could not run
        out = subprocess.run([ECPCTL, "--spawn"], input=b"", capture_output=True, timeout=10,
                             env=dict(env, ECPD=os.path.join(self.tmp, "no-such-ecpd")))
        self.assertEqual(out.returncode, 2)
        self.assertIn(b"cannot run", out.stderr)

    def test_ecpctl_spawn_finds_the_server_of_its_build_tree(self):
        env = {k: v for k, v in os.environ.items() if k != "ECPD"}
        env.update(XDG_DATA_HOME=os.path.join(self.tmp, "xdg"), PATH="/usr/bin:/bin")
        cli_dir = os.path.dirname(ECPCTL)
        if os.path.exists(os.path.join(cli_dir, "ecpd")) or \
                os.path.realpath(os.path.join(cli_dir, "..", "..", "server", "ecpd")) != os.path.realpath(ECPD):
            self.skipTest("ecpctl is not in a build tree beside ecpd")
        out = subprocess.run([ECPCTL, "--spawn", "ecp/ping", "[7]"], capture_output=True, timeout=10, env=env)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(json.loads(out.stdout)["result"], [7])


SANITIZER_REPORTS = (b"AddressSanitizer", b"LeakSanitizer", b"UndefinedBehaviorSanitizer", b"runtime error:")


def read_until_closed(sock, timeout=10):
    """Everything the peer sends until it closes (a reset counts as closed)."""
    sock.settimeout(timeout)
    data = b""
    while True:
        try:
            chunk = sock.recv(1 << 16)
        except ConnectionResetError:
            return data
        if not chunk:
            return data
        data += chunk


class InputLimitTests(unittest.TestCase):
    """What unfinished messages may cost a shared server: a budget for all
    connections together, and a timeout for those that never finish one."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ecpd-transport-")

    def test_unfinished_lines_past_the_budget_are_refused_and_memory_stays_bounded(self):
        budget = 64 << 20
        srv = SocketServer(self.tmp, "--max-message-bytes", str(40 << 20), "--max-input-bytes", str(budget))
        try:
            first = Client(srv.connect())
            self.assertEqual(first.call(req(0, "ecp/ping"))["id"], 0)
            before = rss_kb(srv.p.pid)
            head = b'{"jsonrpc":"2.0","id":1,"method":"ecp/ping","params":["'
            piece = b"x" * (1 << 20)
            conns, refused = [], []
            for _ in range(10):  # 10 x 24 MiB, each line left unfinished: 240 MiB without a budget
                c = srv.connect()
                conns.append(c)
                try:
                    c.sendall(head)
                    for _ in range(24):
                        c.sendall(piece)
                except (BrokenPipeError, ConnectionResetError):
                    refused.append(c)
                    continue
                time.sleep(0.2)  # the server reads what the socket still holds
            grown_mb = (rss_kb(srv.p.pid) - before) / 1024
            print("\n  10 unfinished 24 MiB lines against a 64 MiB budget raised RSS by %.0f MB" % grown_mb,
                  file=sys.stderr)
            # two lines fit in the budget; every other connection was told and closed
            closed, kept = [], []
            for c in conns:
                c.settimeout(0.5)
                try:
                    got = c.recv(1 << 16)
                except socket.timeout:
                    kept.append(c)  # still open: its line is held
                    continue
                except ConnectionResetError:
                    got = b""
                closed.append(got + read_until_closed(c))
            self.assertEqual(len(closed), 8)
            self.assertEqual(len(kept), 2)
            for data in closed:
                error = json.loads(data.split(b"\n")[0])
                self.assertEqual(error["id"], None)
                self.assertEqual(error["error"]["code"], -32000)
                self.assertEqual(error["error"]["message"],
                                 "Too much unfinished input: this server holds at most %d bytes of it across "
                                 "its connections" % budget)
            self.assertLess(grown_mb, (budget >> 20) + 40 * SANITIZED)
            # the server and the others are untouched: a new client is served, the held lines complete
            late = Client(srv.connect())
            self.assertEqual(late.call(req(5, "ecp/ping", [5]))["result"], [5])
            self.assertEqual(first.call(req(6, "ecp/ping", [6]))["result"], [6])
            for c in kept:
                c.settimeout(60)
                c.sendall(b'"]}\n')
                answer = Reader(c.recv).message()
                self.assertEqual(len(answer["result"][0]), 24 << 20)
            for c in conns + [late.s, first.s]:
                c.close()
        finally:
            self.assertEqual(srv.stop(), 0)

    def test_one_honest_large_message_alone_still_works(self):
        srv = SocketServer(self.tmp)  # the defaults: 256 MiB a message, twice that in all
        try:
            c = Client(srv.connect())
            item = '"' + "v" * 998 + '",'
            body = ('{"jsonrpc":"2.0","id":1,"method":"ecp/methods","params":{"namespace":"ecp","pad":['
                    + item * ((200 << 20) // len(item) + 1) + '1]}}\n').encode()
            self.assertGreater(len(body), 200 << 20)
            c.s.settimeout(120)
            c.s.sendall(body)
            answer = c.r.message()
            self.assertEqual(answer["id"], 1)
            self.assertIn("result", answer)
            c.s.close()
        finally:
            self.assertEqual(srv.stop(), 0)

    def test_connections_that_never_finish_a_message_time_out(self):
        srv = SocketServer(self.tmp, "--input-timeout", "1")
        try:
            silent = srv.connect()
            unfinished = srv.connect()
            unfinished.sendall(b'{"jsonrpc":"2.0","id":1,"method":"ecp/pi')
            talker = Client(srv.connect())
            self.assertEqual(talker.call(req(1, "ecp/ping", [1]))["result"], [1])
            slow = srv.connect()
            started = time.time()
            line = nl(req(2, "ecp/ping", ["steady"]))
            # a slow but steady sender: a few bytes every 0.3 s, for 3 s in all
            step = len(line) // 10 + 1
            for i in range(0, len(line), step):
                slow.sendall(line[i:i + step])
                time.sleep(0.3)
            self.assertEqual(Reader(slow.recv).message()["result"], ["steady"])
            for sock in (silent, unfinished):
                data = read_until_closed(sock, timeout=5)
                error = json.loads(data.split(b"\n")[0])
                self.assertEqual(error["error"]["code"], -32000)
                self.assertEqual(error["error"]["message"],
                                 "Timed out: 1 seconds without input before a message was complete")
            self.assertLess(time.time() - started, 6)
            # idle between messages is no fault: the talker stays
            time.sleep(1.5)
            self.assertEqual(talker.call(req(3, "ecp/ping", [3]))["result"], [3])
            # one that stops in the middle of its next message does not
            talker.s.sendall(b'{"jsonrpc":"2.0",')
            error = json.loads(read_until_closed(talker.s, timeout=5).split(b"\n")[0])
            self.assertIn("Timed out", error["error"]["message"])
            for sock in (silent, unfinished, slow, talker.s):
                sock.close()
        finally:
            self.assertEqual(srv.stop(), 0)

    def test_a_timed_out_connection_that_left_answers_unread_frees_its_place(self):
        srv = SocketServer(self.tmp, "--input-timeout", "0.5", "--max-connections", "2")
        try:
            stuck = srv.connect()
            pad = "z" * (1 << 18)
            for i in range(8):  # 2 MiB of answers it never reads, under the pause bound
                stuck.sendall(nl(req(i, "ecp/ping", {"pad": pad})))
            stuck.sendall(b'{"jsonrpc":"2.0",')
            time.sleep(2.0)
            first, second = Client(srv.connect()), Client(srv.connect())
            self.assertEqual(first.call(req(1, "ecp/ping", [1]))["result"], [1])
            self.assertEqual(second.call(req(2, "ecp/ping", [2]))["result"], [2])
            for sock in (stuck, first.s, second.s):
                sock.close()
        finally:
            self.assertEqual(srv.stop(), 0)

    def test_the_timeout_is_for_shared_servers_only(self):
        s = Stdio(self.tmp, "--input-timeout", "0.2")
        time.sleep(0.8)  # the one client of a stdio server may take its time
        self.assertEqual(s.call(req(1, "ecp/ping", [1]))["result"], [1])
        self.assertEqual(s.close(), 0)

    def test_the_flags_need_numbers(self):
        for args in (["--max-input-bytes", "100"], ["--max-input-bytes", "lots"], ["--input-timeout", "0"],
                     ["--input-timeout", "soon"]):
            p = subprocess.run([ECPD, *args, "--version"], capture_output=True)
            self.assertEqual(p.returncode, 2, args)
            self.assertIn(args[0].encode(), p.stderr)


class TeardownTests(unittest.TestCase):
    """The server ends cleanly while peers still hold what it wrote them.

    Each test checks the exit status and that stderr holds no sanitizer
    report: in the ASan build, a use-after-free at teardown shows there (and
    in the status), and nowhere else."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ecpd-transport-")

    def assert_clean_exit(self, p, timeout=5):
        code = p.wait(timeout)
        err = p.stderr.read()
        p.stderr.close()
        for report in SANITIZER_REPORTS + (b"loop still had handles",):
            if report in err:
                self.fail("the server's stderr holds %r:\n%s" % (report, err.decode(errors="replace")[:6000]))
        self.assertEqual(code, 0, err.decode(errors="replace")[:6000])

    @staticmethod
    def flood(send):
        """Sends 256 KiB pings without reading the answers until the server
        stops reading us: its answers then fill the stream and wait."""
        pad = "z" * (1 << 18)
        sent = 0
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                send(nl(req(sent, "ecp/ping", {"pad": pad})))
                sent += 1
            except (socket.timeout, TimeoutError):
                return sent
        raise AssertionError("the server kept reading from a client that does not read")

    def socket_server_with_unread_output(self):
        srv = SocketServer(self.tmp)
        stuck = srv.connect()
        stuck.settimeout(1.0)
        self.flood(stuck.sendall)
        return srv, stuck

    def test_sigterm_then_the_unread_socket_client_leaves(self):
        srv, stuck = self.socket_server_with_unread_output()
        srv.p.send_signal(signal.SIGTERM)
        time.sleep(0.3)  # the server is waiting for its answers to be read
        stuck.close()    # ... and the peer goes instead
        self.assert_clean_exit(srv.p)
        self.assertFalse(os.path.exists(srv.path))

    def test_sigterm_then_the_unread_socket_client_reads_late(self):
        srv, stuck = self.socket_server_with_unread_output()
        srv.p.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        stuck.settimeout(5)
        try:
            while stuck.recv(1 << 20):
                pass
        except OSError:
            pass
        stuck.close()
        self.assert_clean_exit(srv.p)

    def test_sigterm_while_a_socket_client_never_reads(self):
        srv, stuck = self.socket_server_with_unread_output()
        other = Client(srv.connect())
        self.assertEqual(other.call(req(1, "ecp/ping", [1]))["result"], [1])
        t = time.time()
        srv.p.send_signal(signal.SIGTERM)
        self.assert_clean_exit(srv.p)
        self.assertLess(time.time() - t, 2.0)  # the unread answers do not hold the exit up
        self.assertEqual(other.s.recv(100), b"")  # every client was closed
        stuck.close()

    def test_sigterm_while_the_stdio_client_does_not_read(self):
        s = Stdio(self.tmp)
        os.set_blocking(s.p.stdin.fileno(), False)

        def send(data):
            view = memoryview(data)
            deadline = time.time() + 1.0
            while view:
                try:
                    n = os.write(s.p.stdin.fileno(), view)
                    view = view[n:]
                    deadline = time.time() + 1.0
                except BlockingIOError:
                    if time.time() > deadline:
                        raise TimeoutError
                    time.sleep(0.01)

        self.flood(send)
        s.p.send_signal(signal.SIGTERM)
        time.sleep(0.8)  # past the time the server waits for stdout to be read
        s.p.stdout.close()
        self.assert_clean_exit(s.p)
        s.p.stdin.close()

    def test_exit_after_the_watched_process_died_touches_no_freed_memory(self):
        # libuv reads a closing handle after the server may have freed it, and
        # libuv is not instrumented: freed memory is filled with garbage
        # instead (glibc and ASan each have a switch for it), so such a read
        # derails the loop.
        env = dict(os.environ, MALLOC_PERTURB_="165")
        env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":max_free_fill_size=65536:free_fill_byte=165"
        sleeper = subprocess.Popen(["sleep", "60"])
        p = subprocess.Popen([ECPD, "--stdio", "--data-dir", os.path.join(self.tmp, "data")], env=env,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        p.stdin.write(nl(req(1, "initialize", {"processId": sleeper.pid})))
        p.stdin.flush()
        self.assertEqual(Reader(p.stdout.read1).message()["id"], 1)
        sleeper.kill()
        sleeper.wait()
        self.assert_clean_exit(p)
        p.stdin.close()
        p.stdout.close()


# Like PINGER, on a connection that takes no document/didChange: what it
# measures is the server's loop, not the time to read a 100 MB notification.
QUIET_PINGER = PINGER.replace('sys.stdout.write("ready', """s.sendall(b'{"jsonrpc":"2.0","id":0,"method":"notifications/unsubscribe","params":{"events":["document/didChange"]}}\\n')
f.readline()
sys.stdout.write("ready""")


def worst_quiet_ping_during(srv, client, msg):
    return worst_ping_during(srv, client, msg, QUIET_PINGER)


class LargeEditStallTests(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ecpd-transport-")
        self.srv = SocketServer(self.tmp)

    def tearDown(self):
        self.srv.stop()

    def huge_set_content(self, watched):
        a = Client(self.srv.connect())
        if not watched:  # nobody takes the change event: what is left is the service's own work
            a.call(req(0, "notifications/unsubscribe", {"events": ["document/didChange"]}))
        doc = a.call(req(1, "document/open", {"uri": "untitled:big", "content": "small\ntext"}))["result"]["documentId"]
        # quotes, tabs, newlines and non-ASCII: unescaping it is real work
        unit = 'say "\tq\\" \u00e9 ' * 5 + "\n"
        text = unit * ((100 << 20) // len(unit.encode()))
        t = time.time()
        r, worst = worst_quiet_ping_during(self.srv, a, req(2, "document/setContent",
                                                            {"documentId": doc, "content": text}))
        print("\n  setContent of %d MB%s: %.2f s, slowest ping %.0f ms" % (
            len(text.encode()) >> 20, ", its change event sent to one client" if watched else "", time.time() - t,
            worst * 1000), file=sys.stderr)
        self.assertTrue(r["result"]["success"])
        self.assertEqual(r["result"]["version"], 2)
        info = a.call(req(3, "document/info", {"documentId": doc}))["result"]
        self.assertEqual(info["lineCount"], text.count("\n") + 1)
        got = a.call(req(4, "document/textInRange", {"documentId": doc, "range": {
            "start": {"line": 1, "column": 0}, "end": {"line": 2, "column": 0}}}))["result"]["text"]
        self.assertEqual(got, unit)
        # the step keeps the old tree: undo gives the old text back, redo the new one
        self.assertTrue(a.call(req(5, "document/undo", {"documentId": doc}))["result"]["success"])
        self.assertEqual(a.call(req(6, "document/content", {"documentId": doc}))["result"]["content"], "small\ntext")
        self.assertTrue(a.call(req(7, "document/redo", {"documentId": doc}))["result"]["success"])
        info = a.call(req(8, "document/info", {"documentId": doc}))["result"]
        self.assertEqual(info["lineCount"], text.count("\n") + 1)
        self.assertEqual(info["version"], 4)
        return worst

    def test_a_huge_set_content_stalls_nobody(self):
        # unescaping, building and swapping in the text on the loop stalled others ~2.2 s (more on a loaded
        # machine); off the loop, what is left there is ~10 ms (under AddressSanitizer, whose realloc copies,
        # growing the buffer the 100 MB message arrives in costs the loop some 300 ms more)
        self.assertLess(self.huge_set_content(watched=False), 0.5 * SANITIZED)

    def test_a_huge_set_content_watched_by_a_client_stalls_nobody_long(self):
        # the change event quotes the message's own JSON string in place: escaping 100 MB again took ~1.5 s,
        # copying it into the event and again into the write queue 0.2-1.8 s; now ~20 ms
        self.assertLess(self.huge_set_content(watched=True), 0.25 * SANITIZED)

    def test_a_huge_undo_and_redo_stall_nobody_and_keep_their_order(self):
        # An undo of a huge setContent measured the text it takes away on the loop (~300 ms): it is measured
        # with the new text, off the loop, as the setContent is made. A redo back to the huge text sends it
        # in its change event: escaping it on the loop stalled others ~1.4 s. It is escaped on the pool now,
        # the event waiting in each client's queue meanwhile, so it still comes before the redo's answer and
        # what follows it.
        a = Client(self.srv.connect())
        other = Client(self.srv.connect())
        self.assertEqual(other.call(req(1, "ecp/ping", [1]), framing=cl)["result"], [1])
        doc = a.call(req(1, "document/open", {"uri": "untitled:redo", "content": "small"}))["result"]["documentId"]
        unit = 'say "\tq\\" \u00e9 \U0001F600' * 5 + "\n"
        text = unit * ((64 << 20) // len(unit.encode()))

        def change_seen_by_other(version):
            while True:
                m = other.r.message()
                if m.get("method") == "document/didChange" and m["params"]["version"] == version:
                    return m["params"]["changes"][0]

        self.assertTrue(a.call(req(2, "document/setContent", {"documentId": doc, "content": text}))["result"]["success"])
        change_seen_by_other(2)
        r, worst_undo = worst_quiet_ping_during(self.srv, a, req(3, "document/undo", {"documentId": doc}))
        self.assertTrue(r["result"]["success"])
        undone = change_seen_by_other(3)
        self.assertEqual(undone["text"], "small")
        self.assertEqual(undone["range"]["end"], {"line": text.count("\n"), "column": 0})
        self.assertEqual(undone["rangeLength"], len(text.encode("utf-16-le")) // 2)
        print("\n  undo of a %d MB text: slowest ping %.0f ms" % (len(text.encode()) >> 20, worst_undo * 1000),
              file=sys.stderr)
        self.assertLess(worst_undo, 0.25 * SANITIZED)
        pinger = subprocess.Popen([sys.executable, "-c", QUIET_PINGER, self.srv.path], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE)
        self.assertEqual(pinger.stdout.readline().strip(), b"ready")
        time.sleep(0.02)
        a.s.sendall(nl(req(4, "document/redo", {"documentId": doc})) +
                    nl(req(5, "document/info", {"documentId": doc})))
        order = []
        while True:
            m = a.r.message()
            if m.get("method") == "document/didChange":
                order.append(("change", m["params"]["version"]))
                if m["params"]["version"] == 4:
                    self.assertTrue(m["params"]["changes"][0]["text"] == text)
            elif "id" in m:
                order.append(("answer", m["id"]))
                if m["id"] == 5:
                    break
        out, _ = pinger.communicate(b"stop\n", timeout=60)
        worst = float(out)
        print("\n  redo of a %d MB text, its change event sent to two clients: slowest ping %.0f ms" % (
            len(text.encode()) >> 20, worst * 1000), file=sys.stderr)
        self.assertEqual([o for o in order if o[0] == "answer"], [("answer", 4), ("answer", 5)])
        self.assertLess(order.index(("change", 4)), order.index(("answer", 4)))
        change = change_seen_by_other(4)  # the other client gets it whole too, framed with Content-Length
        self.assertTrue(change["text"] == text)
        self.assertEqual(change["range"], {"start": {"line": 0, "column": 0}, "end": {"line": 0, "column": 5}})
        self.assertLess(worst, 0.25 * SANITIZED)

    def test_a_huge_set_content_is_seen_by_others_whole(self):
        a = Client(self.srv.connect())
        doc = a.call(req(1, "document/open", {"uri": "untitled:seen", "content": "é\n😀x"}))["result"]["documentId"]
        c = Client(self.srv.connect())  # takes every notification, in UTF-16 columns (the default)
        self.assertEqual(c.call(req(1, "ecp/ping", [1]))["result"], [1])
        # the same, framed with Content-Length: the text is quoted from the message, not copied, and the
        # header must count it
        d = Client(self.srv.connect())
        self.assertEqual(d.call(req(1, "ecp/ping", [1]), framing=cl)["result"], [1])

        def next_change(client=c):
            while True:
                m = client.r.message()
                if m.get("method") == "document/didChange":
                    return m["params"]["changes"]

        text = "line é 😀 \"q\"\n" * ((2 << 20) // 16)
        self.assertTrue(a.call(req(2, "document/setContent", {"documentId": doc, "content": text}))["result"]["success"])
        [ch] = next_change()
        self.assertEqual(ch["range"], {"start": {"line": 0, "column": 0}, "end": {"line": 1, "column": 3}})
        self.assertEqual(ch["rangeLength"], 5)
        self.assertTrue(ch["text"] == text)
        [framed] = next_change(d)
        self.assertEqual(framed, ch)
        self.assertTrue(a.call(req(3, "document/undo", {"documentId": doc}))["result"]["success"])
        [ch] = next_change()
        self.assertEqual(ch["range"], {"start": {"line": 0, "column": 0},
                                       "end": {"line": text.count("\n"), "column": 0}})
        self.assertEqual(ch["rangeLength"], len(text.encode("utf-16-le")) // 2)
        self.assertEqual(ch["text"], "é\n😀x")
        self.assertTrue(a.call(req(4, "document/redo", {"documentId": doc}))["result"]["success"])
        [ch] = next_change()
        self.assertTrue(ch["text"] == text)
        self.assertEqual(a.call(req(5, "document/content", {"documentId": doc}))["result"]["content"], text)

    def test_a_huge_set_content_whose_client_leaves(self):
        a = Client(self.srv.connect())
        doc = a.call(req(1, "document/open", {"uri": "untitled:left", "content": "kept"}))["result"]["documentId"]
        text = 'x"\n' * (10 << 20)
        for k in range(3):  # gone while the message is read, while the text is made, or after
            s = self.srv.connect()
            s.sendall(nl(req(1, "document/setContent", {"documentId": doc, "content": text})))
            time.sleep(0.05 * k)
            s.close()
        time.sleep(0.5)
        self.assertEqual(a.call(req(2, "ecp/ping", [1]))["result"], [1])
        info = a.call(req(3, "document/info", {"documentId": doc}))["result"]
        self.assertIn(info["lineCount"], (1, text.count("\n") + 1))  # the whole text or none of it
        self.assertIsNone(self.srv.p.poll())

    def test_an_edit_sent_after_a_huge_set_content_lands_after_it(self):
        # The replacement is built off the loop; the same client's next edit,
        # sent without waiting, must still apply to the new text, not vanish
        # under it. Another client's ping is not held back meanwhile.
        a = Client(self.srv.connect())
        other = Client(self.srv.connect())
        a.call(req(0, "notifications/unsubscribe", {"events": ["document/didChange"]}))
        doc = a.call(req(1, "document/open", {"uri": "untitled:order", "content": "old"}))["result"]["documentId"]
        text = "new line\n" * (4 << 20)
        a.s.sendall(nl(req(2, "document/setContent", {"documentId": doc, "content": text})) +
                    nl(req(3, "document/insert", {"documentId": doc, "position": {"line": 0, "column": 0},
                                                  "text": "typed "})))
        self.assertEqual(other.call(req(9, "ecp/ping", [9]))["result"], [9])
        answers = {}
        while len(answers) < 2:
            m = a.r.message()
            if "id" in m:
                answers[m["id"]] = m
        self.assertTrue(answers[2]["result"]["success"])
        self.assertTrue(answers[3]["result"]["success"])
        first = a.call(req(4, "document/line", {"documentId": doc, "lineNumber": 0}))["result"]["text"]
        self.assertEqual(first, "typed new line")

if __name__ == "__main__":
    ECPD = os.path.abspath(sys.argv[1])
    ECPCTL = os.path.abspath(sys.argv[2])
    unittest.main(argv=[sys.argv[0], "-v"])
