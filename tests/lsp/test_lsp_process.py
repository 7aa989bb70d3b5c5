"""The lsp service in the real ecpd binary: however ecpd ends (exit, SIGTERM,
SIGKILL), the language servers it started end with it, and a server killed
behind its back is restarted while clients keep being answered.

usage: test_lsp_process.py ECPD
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

ECPD = None


def children(pid):
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def wait_gone(pids, seconds=10):
    deadline = time.time() + seconds
    while time.time() < deadline and any(alive(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if alive(p)]


class Server:
    def __init__(self, tmp):
        # language servers start only in a trusted workspace
        self.p = subprocess.Popen([ECPD, "--stdio", "--workspace", tmp, "--data-dir", os.path.join(tmp, "data"),
                                   "--trust-workspace"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.next_id = 1
        self.notes = []

    def call(self, method, params):
        i = self.next_id
        self.next_id += 1
        self.p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n").encode())
        self.p.stdin.flush()
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise EOFError("ecpd closed stdout")
            m = json.loads(line)
            if m.get("id") == i:
                if "error" in m:
                    raise AssertionError("%s failed: %s" % (method, m["error"]))
                return m["result"]
            self.notes.append(m)


@unittest.skipUnless(shutil.which("clangd"), "clangd is not installed")
class LspProcessTests(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ecpd-lsp-")
        with open(os.path.join(self.tmp, "a.c"), "w") as f:
            f.write("int add(int a, int b) { return a + b; }\n")
        self.uri = "file://" + os.path.join(self.tmp, "a.c")
        self.servers = []

    def tearDown(self):
        for s in self.servers:
            if s.p.poll() is None:
                s.p.kill()
                s.p.wait()
            for pipe in (s.p.stdin, s.p.stdout):
                try:
                    pipe.close()
                except OSError:
                    pass
        shutil.rmtree(self.tmp, ignore_errors=True)

    def started(self):
        s = Server(self.tmp)
        self.servers.append(s)
        self.assertTrue(s.call("lsp/start", {"languageId": "c"})["ready"])
        kids = children(s.p.pid)
        self.assertEqual(len(kids), 1)
        return s, kids

    def test_exit_stops_the_servers(self):
        s, kids = self.started()
        s.p.stdin.close()
        self.assertEqual(s.p.wait(10), 0)
        self.assertEqual(wait_gone(kids), [])

    def test_sigterm_stops_the_servers(self):
        s, kids = self.started()
        s.p.send_signal(signal.SIGTERM)
        s.p.wait(10)
        self.assertEqual(wait_gone(kids), [])

    def test_sigkill_leaves_no_server_behind(self):
        s, kids = self.started()
        s.p.kill()
        s.p.wait(10)
        # the server reads EOF on its stdin and exits
        self.assertEqual(wait_gone(kids), [])

    def test_a_killed_server_comes_back(self):
        s, kids = self.started()
        s.call("document/open", {"uri": self.uri})
        self.assertEqual(len(s.call("lsp/documentSymbol", {"uri": self.uri})["symbols"]), 1)
        os.kill(kids[0], signal.SIGKILL)

        def statuses():
            return [n["params"]["status"] for n in s.notes if n.get("method") == "lsp/serverStatusChanged"]

        # reported, restarted, ready again; clients are answered all along
        deadline = time.time() + 20
        while time.time() < deadline and not ("error" in statuses() and statuses()[-1] == "ready"):
            self.assertEqual(s.call("ecp/ping", [1]), [1])
            time.sleep(0.05)
        self.assertEqual(statuses()[-3:], ["error", "starting", "ready"])
        self.assertEqual(s.call("lsp/status", {"languageId": "c"})["servers"][0]["status"], "ready")
        new = children(s.p.pid)
        self.assertEqual(len(new), 1)
        self.assertNotEqual(new, kids)
        self.assertEqual(len(s.call("lsp/documentSymbol", {"uri": self.uri})["symbols"]), 1)
        s.p.stdin.close()
        self.assertEqual(s.p.wait(10), 0)


if __name__ == "__main__":
    ECPD = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
