#!/usr/bin/env python3
"""ecp-web, the browser GUI's server, through the real binaries: a real ecpd on
a socket in a temporary workspace, a real ecp-web in front of it, and Python's
HTTP and WebSocket clients in place of the browser.

The programs come from the environment: ECPD, ECP_WEB and ECP_WEB_STATIC.
"""
import asyncio
import http.client
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import unittest

import websockets
import websockets.exceptions

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ECPD = os.environ.get("ECPD", os.path.join(ROOT, "build/server/ecpd"))
ECP_WEB = os.environ.get("ECP_WEB", os.path.join(ROOT, "build/clients/web/ecp-web"))
STATIC = os.environ.get("ECP_WEB_STATIC", os.path.join(ROOT, "build/clients/web/static"))
SANITIZED = "quarantine_size_mb" in os.environ.get("ASAN_OPTIONS", "")
SLOW = 4 if SANITIZED else 1


def cl_frame(msg):
    body = json.dumps(msg).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def socket_request(path, method, params=None, timeout=5):
    """One request to ecpd straight on its socket (not through ecp-web); None when nobody answers."""
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(timeout)
    try:
        s.connect(path)
        s.sendall(cl_frame({"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}))
        data = b""
        while b"\r\n\r\n" not in data or len(data) < data.index(b"\r\n\r\n") + 4 + int(data[15:data.index(b"\r\n\r\n")]):
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        return data
    except OSError:
        return None
    finally:
        s.close()


def make_static(path):
    """The page's files as the build made them, with stand-ins for what the bundle has not made (yet):
    the server's tests need files to serve, not the page."""
    if os.path.isdir(STATIC):
        shutil.copytree(STATIC, path)
    else:
        os.makedirs(path)
    if not os.path.exists(os.path.join(path, "index.html")):
        shutil.copy(os.path.join(ROOT, "clients/web/src/index.html"), path)
    for name, text in (("app.js", "console.log('page');\n"), ("app.css", "body{}\n")):
        if not os.path.exists(os.path.join(path, name)):
            with open(os.path.join(path, name), "w") as f:
                f.write(text)


def listening_addresses(port):
    """The local addresses of the IPv4 sockets listening on port, as /proc/net/tcp writes them."""
    with open("/proc/net/tcp") as f:
        rows = [line.split() for line in f.readlines()[1:]]
    return [r[1] for r in rows if r[3] == "0A" and int(r[1].split(":")[1], 16) == port]


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class Web:
    """A workspace, an ecpd on its socket, and an ecp-web in front of it."""

    def __init__(self, extra_args=(), start_ecpd=True, ecpd_args=(), prefix=()):
        self.dir = tempfile.mkdtemp(prefix="ecp-web-test-")
        self.workspace = os.path.join(self.dir, "ws")
        os.mkdir(self.workspace)
        self.socket = os.path.join(self.dir, "ecpd.sock")
        self.static = os.path.join(self.dir, "static")
        make_static(self.static)
        self.env = dict(os.environ, XDG_DATA_HOME=os.path.join(self.dir, "data"),
                        XDG_CONFIG_HOME=os.path.join(self.dir, "config"),
                        XDG_STATE_HOME=os.path.join(self.dir, "state"), ECPD=ECPD)
        self.ecpd = None
        if start_ecpd:
            self.start_ecpd(ecpd_args)
        self.web_err = open(os.path.join(self.dir, "ecp-web.err"), "w+")
        web_env = dict(self.env)
        if SANITIZED:
            # A quarantine of freed memory small enough not to count against ecp-web's memory bounds.
            web_env["ASAN_OPTIONS"] = web_env["ASAN_OPTIONS"].replace("quarantine_size_mb=32", "quarantine_size_mb=4")
        self.web = subprocess.Popen(
            [*prefix, ECP_WEB, "--connect", self.socket, "--workspace", self.workspace, "--static", self.static,
             "--server", ECPD, *extra_args],
            stdout=subprocess.PIPE, stderr=self.web_err, env=web_env, text=True)
        self.url = self.web.stdout.readline().strip()
        if not self.url:
            raise AssertionError("ecp-web printed no URL: " + self.stderr())
        scheme, rest = self.url.split("://", 1)
        self.hostport = rest.split("/", 1)[0]
        self.host, port = self.hostport.rsplit(":", 1)
        self.port = int(port)
        self.token = self.url.split("token=", 1)[1]
        self.tls = scheme == "https"
        self.ws_url = ("wss" if self.tls else "ws") + "://" + self.hostport + "/rpc?token=" + self.token

    def start_ecpd(self, args=()):
        self.ecpd = subprocess.Popen([ECPD, "--socket", self.socket, "--workspace", self.workspace, *args],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=self.env)
        for _ in range(200 * SLOW):
            if socket_request(self.socket, "ecp/ping", timeout=1):
                return
            time.sleep(0.05)
        raise AssertionError("ecpd did not come up")

    def stderr(self):
        self.web_err.flush()
        self.web_err.seek(0)
        return self.web_err.read()

    def http(self, path, headers=None, method="GET"):
        if self.tls:
            conn = http.client.HTTPSConnection(self.host, self.port, timeout=10,
                                               context=ssl._create_unverified_context())
        else:
            conn = http.client.HTTPConnection(self.host, self.port, timeout=10)
        try:
            conn.request(method, path, headers=headers or {})
            r = conn.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            conn.close()

    def upgrade_status(self, path, origin=None):
        """The status of a WebSocket upgrade (101 when it would open)."""
        headers = {"Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13",
                   "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}
        if origin:
            headers["Origin"] = origin
        return self.http(path, headers)[0]

    def connect(self, **kw):
        kw.setdefault("max_size", None)
        if self.tls:
            kw.setdefault("ssl", ssl._create_unverified_context())
        return websockets.connect(kw.pop("url", self.ws_url), **kw)

    def stop(self):
        """Stops ecp-web (checking it ends cleanly) and every ecpd on the socket."""
        status = self.web.poll()
        if status is None:
            self.web.send_signal(signal.SIGTERM)
            try:
                status = self.web.wait(10 * SLOW)
            except subprocess.TimeoutExpired:
                self.web.kill()
                self.web.wait()
                status = "hung"
        socket_request(self.socket, "ecp/stop", timeout=2)
        if self.ecpd:
            try:
                self.ecpd.wait(5 * SLOW)
            except subprocess.TimeoutExpired:
                self.ecpd.kill()
                self.ecpd.wait()
        self.web.stdout.close()
        err = self.stderr()
        self.web_err.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        return status, err


async def call(ws, id_, method, params=None, timeout=10):
    await ws.send(json.dumps({"jsonrpc": "2.0", "id": id_, "method": method, "params": params or {}}))
    deadline = time.monotonic() + timeout * SLOW
    while True:
        msg = json.loads(await asyncio.wait_for(ws.recv(), max(0.1, deadline - time.monotonic())))
        if msg.get("id") == id_ and "method" not in msg:
            return msg


async def initialize(ws):
    r = await call(ws, 1, "initialize", {"clientInfo": {"name": "test"},
                                         "capabilities": {"positionEncodings": ["utf-16"]}})
    assert "result" in r, r
    await ws.send(json.dumps({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
    return r["result"]


def run(coro):
    return asyncio.run(coro)


class WebCase(unittest.TestCase):
    web_args = ()
    ecpd_args = ()

    def setUp(self):
        self.w = Web(self.web_args, ecpd_args=self.ecpd_args)

    def tearDown(self):
        status, err = self.w.stop()
        self.assertEqual(status, 0, "ecp-web did not end cleanly on SIGTERM:\n" + err)
        self.assertNotIn("Sanitizer", err)

    def assertRefused(self, path, status, origin=None):
        self.assertEqual(self.w.upgrade_status(path, origin), status, (path, origin))
        async def go():
            with self.assertRaises(websockets.exceptions.InvalidHandshake):
                async with self.w.connect(url=("wss" if self.w.tls else "ws") + "://" + self.w.hostport + path,
                                          origin=origin):
                    pass
        run(go())


class Http(WebCase):
    def test_listens_on_loopback_only_and_the_url_works(self):
        self.assertTrue(self.w.url.startswith("http://127.0.0.1:"), self.w.url)
        self.assertEqual(len(self.w.token), 64)
        int(self.w.token, 16)
        self.assertEqual(listening_addresses(self.w.port), ["0100007F:%04X" % self.w.port])
        status, headers, body = self.w.http(self.w.url.split(self.w.hostport, 1)[1])
        self.assertEqual(status, 200)
        self.assertIn(b"<!doctype html>", body)

    def test_a_missing_or_wrong_token_is_refused(self):
        wrong = "0" * 64
        for path in ("/", "/app.js", "/index.html", "/?token=" + wrong, "/app.js?token=" + wrong,
                     "/?token=" + self.w.token[:-1], "/?token=" + self.w.token + "0", "/?token="):
            self.assertEqual(self.w.http(path)[0], 403, path)
        self.assertEqual(self.w.http("/", {"Cookie": "ecp_web_token=" + wrong})[0], 403)

    def test_the_right_token_sets_a_cookie_that_serves_later_requests(self):
        status, headers, _ = self.w.http("/?token=" + self.w.token)
        self.assertEqual(status, 200)
        cookie = headers["set-cookie"]
        self.assertIn("ecp_web_token=" + self.w.token, cookie)
        for attr in ("HttpOnly", "SameSite=Strict", "Path=/"):
            self.assertIn(attr, cookie)
        only_cookie = {"Cookie": "other=1; ecp_web_token=" + self.w.token}
        self.assertEqual(self.w.http("/app.js", only_cookie)[0], 200)
        self.assertEqual(self.w.http("/", only_cookie)[0], 200)

    def test_headers(self):
        status, headers, _ = self.w.http("/?token=" + self.w.token)
        self.assertEqual(headers["content-type"], "text/html; charset=utf-8")
        self.assertEqual(headers["cache-control"], "no-store")
        self.assertEqual(headers["x-content-type-options"], "nosniff")
        csp = headers["content-security-policy"]
        self.assertIn("script-src 'self';", csp)
        self.assertIn("connect-src 'self' ws://" + self.w.hostport, csp)
        self.assertNotIn("unsafe-eval", csp)
        _, headers, _ = self.w.http("/app.js?token=" + self.w.token)
        self.assertEqual(headers["content-type"], "text/javascript; charset=utf-8")
        self.assertEqual(headers["x-content-type-options"], "nosniff")
        _, headers, _ = self.w.http("/app.css?token=" + self.w.token)
        self.assertEqual(headers["content-type"], "text/css; charset=utf-8")

    def test_only_files_inside_static_are_served(self):
        os.symlink("/etc/passwd", os.path.join(self.w.static, "leak.txt"))
        os.symlink("/etc", os.path.join(self.w.static, "etc"))
        os.mkdir(os.path.join(self.w.static, "sub"))
        t = "?token=" + self.w.token
        for path in ("/../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/..%2f..%2fetc%2fpasswd",
                     "/sub/../../../etc/passwd", "/%2E%2E/%2E%2E/%2E%2E/etc/passwd", "/leak.txt",
                     "/etc/passwd", "/sub", "/sub/", "/nothing-here.js", "/.%2e/.%2e/etc/passwd",
                     "//etc/passwd", "/%00index.html"):
            status, _, body = self.w.http(path + t)
            self.assertNotEqual(status, 200, path)
            self.assertNotIn(b"root:", body, path)
        self.assertEqual(self.w.http("/nothing-here.js" + t)[0], 404)

    def test_only_get(self):
        t = "?token=" + self.w.token
        for method in ("POST", "PUT", "DELETE"):
            status, _, _ = self.w.http("/index.html" + t, method=method)
            self.assertNotEqual(status, 200, method)
            self.assertGreaterEqual(status, 400, method)


class HostFlag(WebCase):
    web_args = ("--host", "127.0.0.2")

    def test_host_chooses_the_address(self):
        self.assertTrue(self.w.url.startswith("http://127.0.0.2:"), self.w.url)
        self.assertEqual(listening_addresses(self.w.port), ["0200007F:%04X" % self.w.port])
        self.assertEqual(self.w.http("/?token=" + self.w.token)[0], 200)

        async def go():
            async with self.w.connect(origin="http://" + self.w.hostport) as ws:
                self.assertEqual((await call(ws, 2, "ecp/ping"))["result"], {})
        run(go())


class Upgrade(WebCase):
    def test_token_and_origin(self):
        t = "?token=" + self.w.token
        self.assertRefused("/rpc", 403)
        self.assertRefused("/rpc?token=" + "0" * 64, 403)
        self.assertRefused("/rpc" + t, 403, origin="http://evil.example")
        self.assertRefused("/rpc" + t, 403, origin="http://%s.evil.example" % self.w.hostport)
        self.assertRefused("/rpc" + t, 403, origin="null")
        self.assertRefused("/other" + t, 404)
        self.assertEqual(self.w.upgrade_status("/rpc" + t, "http://" + self.w.hostport), 101)
        self.assertEqual(self.w.upgrade_status("/rpc" + t), 101)

        async def works(**kw):
            async with self.w.connect(**kw) as ws:
                r = await call(ws, 7, "ecp/ping")
                self.assertEqual(r["result"], {})
        run(works(origin="http://" + self.w.hostport))
        run(works())  # no Origin: not a browser, but it holds the token

    def test_relay_ping_client_ids_and_large_messages(self):
        async def go():
            async with self.w.connect() as a, self.w.connect() as b:
                ia, ib = await initialize(a), await initialize(b)
                self.assertNotEqual(ia["clientId"], ib["clientId"])
                self.assertEqual((await call(a, 2, "ecp/ping"))["result"], {})
                path = os.path.join(self.w.workspace, "big.txt")
                with open(path, "w") as f:
                    f.write("small\n")
                doc = (await call(a, 3, "document/open", {"uri": "file://" + path}))["result"]["documentId"]
                text = "".join("line %d é ✓ 𝄞 \"quoted\" \\ tab\t\n" % i for i in range(300000))
                self.assertGreater(len(text.encode()), 10 << 20)
                r = await call(a, 4, "document/setContent", {"documentId": doc, "content": text}, timeout=60)
                self.assertIn("result", r)
                r = await call(a, 5, "document/content", {"documentId": doc}, timeout=60)
                self.assertEqual(r["result"]["content"], text)
                self.assertEqual((await call(b, 6, "ecp/ping"))["result"], {})
        run(go())

    def test_binary_or_bad_utf8_closes_that_websocket_only(self):
        async def go():
            async with self.w.connect() as other:
                await initialize(other)
                async with self.w.connect() as ws:
                    await ws.send(b'{"jsonrpc":"2.0","id":1,"method":"ecp/ping"}')
                    with self.assertRaises(websockets.exceptions.ConnectionClosed) as cm:
                        await asyncio.wait_for(ws.recv(), 5 * SLOW)
                    self.assertEqual(cm.exception.rcvd.code, 1003)
                async with self.w.connect() as ws:
                    await ws.write_frame(True, websockets.frames.OP_TEXT, b'{"jsonrpc":"2.0","id":1,"method":"\xff\xfe"}')
                    with self.assertRaises(websockets.exceptions.ConnectionClosed) as cm:
                        await asyncio.wait_for(ws.recv(), 5 * SLOW)
                    self.assertEqual(cm.exception.rcvd.code, 1007)
                self.assertEqual((await call(other, 9, "ecp/ping"))["result"], {})
        run(go())

    def test_survives_pages_that_vanish_mid_message_and_many_at_once(self):
        async def vanish_while_sending():
            ws = await self.w.connect()
            await ws.write_frame(False, websockets.frames.OP_TEXT, b'{"jsonrpc":"2.0","id":1,"method":"ecp/pi')
            ws.transport.abort()

        async def vanish_while_receiving():
            ws = await self.w.connect()
            await initialize(ws)
            path = os.path.join(self.w.workspace, "v.txt")
            with open(path, "w") as f:
                f.write("x" * (8 << 20))
            await ws.send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "file/read", "params": {"uri": "file://" + path}}))
            await asyncio.sleep(0.05)
            ws.transport.abort()

        async def one(i):
            async with self.w.connect() as ws:
                r = await call(ws, i, "ecp/ping", timeout=30)
                self.assertEqual(r["result"], {})

        async def go():
            await vanish_while_sending()
            await vanish_while_receiving()
            for _ in range(2):
                await asyncio.gather(*(one(i) for i in range(50)))
            await one(99)
        run(go())
        self.assertIsNone(self.w.web.poll())


class StoppedServer(WebCase):
    def test_an_ecpd_that_stops_accepting_does_not_stop_ecp_web(self):
        # More pages than ecpd's listen backlog (128) while it is stopped: connecting to it would block.
        self.w.ecpd.send_signal(signal.SIGSTOP)
        try:
            async def go():
                pages = await asyncio.wait_for(asyncio.gather(*(self.w.connect() for _ in range(140))), 20 * SLOW)
                loop = asyncio.get_running_loop()
                t0 = time.monotonic()
                status = await loop.run_in_executor(None, self.w.http, "/?token=" + self.w.token)
                self.assertEqual(status[0], 200)
                self.assertLess(time.monotonic() - t0, 2 * SLOW)
                for ws in pages:
                    ws.transport.abort()
            run(go())
        finally:
            self.w.ecpd.send_signal(signal.SIGCONT)

        async def works():
            for _ in range(100):
                try:
                    async with self.w.connect() as ws:
                        await initialize(ws)
                        return
                except (websockets.exceptions.ConnectionClosed, asyncio.TimeoutError):
                    await asyncio.sleep(0.1)
            self.fail("no page could use ecpd again")
        run(works())
        self.assertIsNone(self.w.ecpd.poll(), "a second server took the socket")


class Refusal(WebCase):
    ecpd_args = ("--max-connections", "1")

    def test_a_page_ecpd_refuses_is_closed_with_the_reason(self):
        async def go():
            async with self.w.connect() as first:
                await initialize(first)
                async with self.w.connect() as second:
                    with self.assertRaises(websockets.exceptions.ConnectionClosed) as cm:
                        await asyncio.wait_for(second.recv(), 5 * SLOW)
                    self.assertEqual(cm.exception.rcvd.code, 1013)
                    self.assertIn("Too many connections", cm.exception.rcvd.reason)
                self.assertEqual((await call(first, 3, "ecp/ping"))["result"], {})
        run(go())


class Restart(WebCase):
    def test_ecpd_killed_closes_with_1012_and_a_new_websocket_starts_a_server(self):
        async def go():
            async with self.w.connect() as ws:
                await initialize(ws)
                self.w.ecpd.kill()
                t0 = time.monotonic()
                with self.assertRaises(websockets.exceptions.ConnectionClosed) as cm:
                    while True:
                        await asyncio.wait_for(ws.recv(), 2)
                self.assertEqual(cm.exception.rcvd.code, 1012)
                self.assertLess(time.monotonic() - t0, 1.0)
            self.w.ecpd.wait()
            self.w.ecpd = None
            async with self.w.connect() as ws:
                r = await initialize(ws)
                self.assertIn("clientId", r)
                self.assertEqual((await call(ws, 2, "ecp/ping", timeout=20))["result"], {})
            self.assertIsNotNone(socket_request(self.w.socket, "ecp/ping"))
        run(go())


class Stop(WebCase):
    def test_sigterm_closes_each_page_with_1001_and_ends_cleanly(self):
        async def go():
            async with self.w.connect() as a, self.w.connect() as b:
                await initialize(a)
                await initialize(b)
                self.w.web.send_signal(signal.SIGTERM)
                for ws in (a, b):
                    with self.assertRaises(websockets.exceptions.ConnectionClosed) as cm:
                        while True:
                            await asyncio.wait_for(ws.recv(), 2 * SLOW)
                    self.assertEqual(cm.exception.rcvd.code, 1001)
            self.assertEqual(self.w.web.wait(5 * SLOW), 0)
        run(go())


class NoServer(unittest.TestCase):
    def test_ecp_web_starts_one_when_none_answers(self):
        w = Web(start_ecpd=False)
        try:
            for _ in range(200 * SLOW):
                if socket_request(w.socket, "ecp/ping", timeout=1):
                    break
                time.sleep(0.05)
            else:
                self.fail("no server on the socket: " + w.stderr())

            async def go():
                async with w.connect() as ws:
                    await initialize(ws)
                    self.assertEqual((await call(ws, 2, "ecp/ping"))["result"], {})
            run(go())
        finally:
            status, err = w.stop()
        self.assertEqual(status, 0, err)
        self.assertIn("started", err)


class Backpressure(WebCase):
    def test_a_page_that_stops_reading_does_not_grow_ecp_web(self):
        # Long lines: ecpd's screen does work for every line feed, which makes a flood of `y` lines
        # reach the socket at a fraction of the speed of one of long lines; the bytes are as many.
        script = os.path.join(self.w.workspace, "flood.sh")
        with open(script, "w") as f:
            f.write('#!/bin/sh\nstty -onlcr -echo\nyes "$(printf %0999d 0)" | head -c 50M\nsleep 0.5\n')
        os.chmod(script, 0o755)
        total = 50 << 20
        line = "0" * 999 + "\n"
        expected = (line * (total // len(line) + 1))[:total]
        # What ecp-web may add to its memory while holding the flood back: a few watermarks' worth
        # (more under ASan, whose quarantine keeps some freed memory); without flow control it
        # holds everything ecpd sends meanwhile, about 20 MB.
        bound_kib = (24 if SANITIZED else 12) << 10

        async def go():
            # The client's own buffers are small, so that not reading soon stops its TCP window.
            async with self.w.connect(max_queue=1, read_limit=1 << 16, write_limit=1 << 16) as ws:
                await initialize(ws)
                await call(ws, 2, "notifications/subscribe", {"events": ["terminal/output", "terminal/exit"]})
                base = rss_kib(self.w.web.pid)
                r = await call(ws, 3, "terminal/create", {"shell": script, "cols": 80, "rows": 24})
                tid = r["result"]["terminalId"]
                peak = base
                for _ in range(50):
                    await asyncio.sleep(0.1)
                    peak = max(peak, rss_kib(self.w.web.pid))
                self.assertLess(peak - base, bound_kib,
                                "ecp-web grew by %d KiB while the page did not read" % (peak - base))
                received = []
                while True:
                    msg = json.loads(await asyncio.wait_for(ws.recv(), 30 * SLOW))
                    if msg.get("method") == "terminal/output" and msg["params"]["terminalId"] == tid:
                        received.append(msg["params"]["data"])
                        if len(received) % 16 == 0:
                            peak = max(peak, rss_kib(self.w.web.pid))
                    elif msg.get("method") == "terminal/exit" and msg["params"]["terminalId"] == tid:
                        break
                out = "".join(received).replace("\r", "")
                self.assertEqual(len(out), total)
                self.assertTrue(out == expected, "the output came out of order or changed")
                self.assertLess(peak - base, bound_kib, "ecp-web grew by %d KiB" % (peak - base))
                sys.stderr.write("(ecp-web: %d KiB at the start, %d KiB at most) " % (base, peak))
        run(go())


    def test_an_ecpd_that_stops_reading_does_not_grow_ecp_web(self):
        count, pad = 10000, "x" * 4000  # 40 MB of requests
        bound_kib = (24 if SANITIZED else 12) << 10

        async def go():
            async with self.w.connect(write_limit=1 << 16) as ws:
                await initialize(ws)
                base = rss_kib(self.w.web.pid)
                self.w.ecpd.send_signal(signal.SIGSTOP)
                try:
                    async def send_all():
                        for i in range(count):
                            await ws.send(json.dumps({"jsonrpc": "2.0", "id": 100 + i, "method": "ecp/ping",
                                                      "params": {"pad": pad}}))
                    sender = asyncio.ensure_future(send_all())
                    peak = base
                    for _ in range(30):
                        await asyncio.sleep(0.1)
                        peak = max(peak, rss_kib(self.w.web.pid))
                    self.assertFalse(sender.done(), "40 MB went into ecp-web while ecpd read nothing")
                    self.assertLess(peak - base, bound_kib,
                                    "ecp-web grew by %d KiB while ecpd did not read" % (peak - base))
                finally:
                    self.w.ecpd.send_signal(signal.SIGCONT)
                ids = []
                while len(ids) < count:
                    msg = json.loads(await asyncio.wait_for(ws.recv(), 30 * SLOW))
                    if "id" in msg and "method" not in msg:
                        ids.append(msg["id"])
                await sender
                self.assertEqual(ids, list(range(100, 100 + count)))
        run(go())


class Tls(WebCase):
    def setUp(self):
        self.keys = tempfile.mkdtemp(prefix="ecp-web-tls-")
        self.cert, self.key = os.path.join(self.keys, "cert.pem"), os.path.join(self.keys, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", self.key,
                        "-out", self.cert, "-days", "1", "-subj", "/CN=127.0.0.1"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.web_args = ("--cert", self.cert, "--key", self.key)
        super().setUp()

    def tearDown(self):
        super().tearDown()
        shutil.rmtree(self.keys, ignore_errors=True)

    def test_https_and_wss(self):
        self.assertTrue(self.w.url.startswith("https://127.0.0.1:"), self.w.url)
        status, headers, _ = self.w.http("/?token=" + self.w.token)
        self.assertEqual(status, 200)
        self.assertIn("Secure", headers["set-cookie"])
        self.assertIn("connect-src 'self' wss://" + self.w.hostport, headers["content-security-policy"])
        self.assertEqual(self.w.http("/")[0], 403)

        async def go():
            async with self.w.connect(origin="https://" + self.w.hostport) as ws:
                await initialize(ws)
                self.assertEqual((await call(ws, 2, "ecp/ping"))["result"], {})
        run(go())
        self.assertRefused("/rpc?token=" + self.w.token, 403, origin="http://" + self.w.hostport)


@unittest.skipIf(SANITIZED or not shutil.which("valgrind"), "valgrind, outside the ASan tree")
class Valgrind(unittest.TestCase):
    def test_a_short_session_loses_no_memory(self):
        w = Web(prefix=("valgrind", "--leak-check=full", "--errors-for-leak-kinds=definite",
                        "--error-exitcode=99", "--quiet"))
        try:
            t = "?token=" + w.token
            self.assertEqual(w.http("/" + t)[0], 200)
            self.assertEqual(w.http("/app.js")[0], 403)
            self.assertEqual(w.http("/nothing" + t)[0], 404)
            self.assertEqual(w.upgrade_status("/rpc" + t, "http://evil.example"), 403)

            async def go():
                async with w.connect() as ws:
                    await initialize(ws)
                    self.assertEqual((await call(ws, 2, "ecp/ping", timeout=30))["result"], {})
                async with w.connect() as ws:
                    await ws.send(b"binary")
                    with self.assertRaises(websockets.exceptions.ConnectionClosed):
                        await asyncio.wait_for(ws.recv(), 30)
            run(go())
        finally:
            status, err = w.stop()
        self.assertEqual(status, 0, err)
        self.assertNotIn("definitely lost", err)


class CommandLine(unittest.TestCase):
    def run_web(self, *args):
        return subprocess.run([ECP_WEB, *args], capture_output=True, text=True, timeout=20 * SLOW)

    def test_help_version_and_bad_flags(self):
        r = self.run_web("--help")
        self.assertEqual(r.returncode, 0)
        self.assertIn("usage: ecp-web", r.stdout)
        r = self.run_web("--version")
        self.assertEqual(r.returncode, 0)
        ecpd_version = subprocess.run([ECPD, "--version"], capture_output=True, text=True).stdout.split()[1]
        self.assertEqual(r.stdout.strip(), "ecp-web " + ecpd_version)
        for bad in (["--bogus"], ["--port"], ["--port", "70000"], ["--port", "x"], ["--cert", "/x"], ["extra"]):
            r = self.run_web(*bad)
            self.assertEqual(r.returncode, 2, bad)
            self.assertIn("usage: ecp-web", r.stderr, bad)
            self.assertEqual(r.stdout, "", bad)

    def test_a_port_in_use(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        static = tempfile.mkdtemp(prefix="ecp-web-static-")
        try:
            r = self.run_web("--port", str(s.getsockname()[1]), "--static", static)
            self.assertEqual(r.returncode, 1)
            self.assertIn("in use", r.stderr)
            self.assertEqual(r.stdout, "")
        finally:
            s.close()
            os.rmdir(static)


if __name__ == "__main__":
    unittest.main(verbosity=2)
