#!/usr/bin/env python3
"""The real ecpd ends its terminals' processes on the way out.

usage: terminal_exit_test.py ECPD

A shell with a background job in a process group of its own runs in a
terminal; then the server is told to go (stdin closed, or SIGTERM). The
server must exit within a second or so, and the shell and its job must be
gone from the process table: not running, not left as zombies.
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import unittest

ECPD = None


def gone(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


class Server:
    def __init__(self):
        self.dir = tempfile.TemporaryDirectory()
        self.proc = subprocess.Popen([ECPD, "--stdio", "--data-dir", self.dir.name],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.next_id = 0

    def request(self, method, params=None):
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.proc.stdin.write((json.dumps(msg) + "\n").encode())
        self.proc.stdin.flush()
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise EOFError("ecpd closed its output")
            reply = json.loads(line)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(reply["error"])
                return reply["result"]

    def screen_text(self, terminal_id):
        buffer = self.request("terminal/getBuffer", {"terminalId": terminal_id})["buffer"]
        return "\n".join("".join(cell["char"] for cell in row) for row in buffer["cells"])

    def close(self):
        self.dir.cleanup()


def start_shell_with_job(server):
    """A bash terminal running `sleep` in the background; returns (shell, job)."""
    server.request("notifications/subscribe", {"events": ["terminal/exit"]})
    tid = server.request("terminal/create", {
        "shell": "/bin/bash", "env": {"HISTFILE": "/dev/null", "PS1": "$ "}})["terminalId"]
    server.request("terminal/write", {"terminalId": tid, "data": "sleep 1234 & echo P''IDS:$$:$!:\r"})
    deadline = time.time() + 10
    while time.time() < deadline:
        m = re.search(r"PIDS:(\d+):(\d+):", server.screen_text(tid))
        if m:
            return int(m.group(1)), int(m.group(2))
        time.sleep(0.05)
    raise AssertionError("the shell did not answer")


class TerminalExit(unittest.TestCase):
    def check_ends(self, how):
        server = Server()
        try:
            shell, job = start_shell_with_job(server)
            self.assertNotEqual(os.getpgid(job), os.getpgid(shell))  # a group of its own
            self.assertEqual(os.getsid(job), shell)                  # in the shell's session
            t0 = time.time()
            how(server.proc)
            server.proc.wait(timeout=10)
            took = time.time() - t0
            self.assertLess(took, 2.0)
            self.assertTrue(gone(shell), "the shell outlived the server")
            deadline = time.time() + 3
            while not gone(job) and time.time() < deadline:
                time.sleep(0.02)
            self.assertTrue(gone(job), "the background job outlived the server")
        finally:
            if server.proc.poll() is None:
                server.proc.kill()
                server.proc.wait()
            server.close()

    def test_stdin_closed(self):
        self.check_ends(lambda p: p.stdin.close())

    def test_sigterm(self):
        self.check_ends(lambda p: p.send_signal(signal.SIGTERM))


if __name__ == "__main__":
    ECPD = sys.argv.pop(1)
    unittest.main()
