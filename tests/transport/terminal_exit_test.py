#!/usr/bin/env python3
"""The real ecpd ends its terminals' processes on the way out.

usage: terminal_exit_test.py ECPD

A shell with a background job in a process group of its own runs in a
terminal; then the server is told to go (stdin closed, or SIGTERM). The
server must exit within a second or so, and the shell and its job must be
gone from the process table: not running, not left as zombies. The same
holds for jobs deaf to SIGHUP and for a job that left the session with
setsid, on terminal/close, on ecp/stop of a socket server, and when the
stdio client closes its end while a model streams and it reads nothing.
"""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "agent"))
from mock_llm import MockLLM  # noqa: E402

ECPD = None


def gone(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


class Server:
    def __init__(self, env=None):
        self.dir = tempfile.TemporaryDirectory()
        self.proc = subprocess.Popen([ECPD, "--stdio", "--data-dir", self.dir.name],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        self.next_id = 0
        self.output = self.proc.stdout

    def send(self, data):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def request(self, method, params=None):
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send((json.dumps(msg) + "\n").encode())
        while True:
            line = self.output.readline()
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
        "shell": "/bin/bash", "env": {"HISTFILE": "/dev/null", "PS1": "$ ", "HOME": "/dev/null"}})["terminalId"]
    server.request("terminal/write", {"terminalId": tid, "data": "sleep 1234 & echo P''IDS:$$:$!:\r"})
    deadline = time.time() + 10
    while time.time() < deadline:
        m = re.search(r"PIDS:(\d+):(\d+):", server.screen_text(tid))
        if m:
            return int(m.group(1)), int(m.group(2))
        time.sleep(0.05)
    raise AssertionError("the shell did not answer")


class SocketServer(Server):
    """The same requests on one connection to a socket server."""

    def __init__(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "ecpd.sock")
        self.proc = subprocess.Popen([ECPD, "--socket", self.path, "--data-dir", self.dir.name],
                                     stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.next_id = 0
        deadline = time.time() + 10
        while True:
            try:
                self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.sock.connect(self.path)
                break
            except OSError:
                self.sock.close()
                if time.time() > deadline:
                    raise
                time.sleep(0.02)
        self.output = self.sock.makefile("rb")

    def send(self, data):
        self.sock.sendall(data)

    def close(self):
        self.output.close()
        self.sock.close()
        super().close()


def start_shell_with_deaf_jobs(server):
    """A bash terminal running two jobs that ignore SIGHUP: one in a process
    group of its own in the shell's session, one in a session of its own
    (setsid) that still has the terminal open. Returns (shell, job, detached)."""
    tid = server.request("terminal/create", {
        "shell": "/bin/bash", "env": {"HISTFILE": "/dev/null", "PS1": "$ ", "HOME": "/dev/null"}})["terminalId"]
    pid_file = os.path.join(server.dir.name, "detached.pid")
    server.request("terminal/write", {"terminalId": tid, "data":
                   "(trap '' HUP; exec sleep 1235) & J=$!; "
                   "setsid sh -c 'trap \"\" HUP; echo $$ > %s; exec sleep 1236' & "
                   "echo P''IDS:$$:$J:\r" % pid_file})
    deadline = time.time() + 10
    while time.time() < deadline:
        m = re.search(r"PIDS:(\d+):(\d+):", server.screen_text(tid))
        if m and os.path.exists(pid_file) and open(pid_file).read().strip():
            detached = int(open(pid_file).read())
            shell, job = int(m.group(1)), int(m.group(2))
            # the jobs have started ignoring SIGHUP by now
            while time.time() < deadline and not all(ignores_hup(p) for p in (job, detached)):
                time.sleep(0.02)
            return tid, shell, job, detached
        time.sleep(0.05)
    raise AssertionError("the shell did not answer")


def ignores_hup(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("SigIgn:"):
                    return bool(int(line.split()[1], 16) & (1 << (signal.SIGHUP - 1)))
    except OSError:
        pass
    return False


def wait_gone(pids, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline and not all(gone(p) for p in pids):
        time.sleep(0.02)
    return [p for p in pids if not gone(p)]


class DeafJobs(unittest.TestCase):
    """Jobs that ignore SIGHUP, or left the session but kept the terminal."""

    def run_case(self, server, how, server_ends=True):
        pids = []
        try:
            tid, shell, job, detached = start_shell_with_deaf_jobs(server)
            pids = [shell, job, detached]
            self.assertNotEqual(os.getsid(detached), shell)
            self.assertNotEqual(os.getpgid(job), os.getpgid(shell))
            t0 = time.time()
            how(server, tid)
            if server_ends:
                server.proc.wait(timeout=10)
                self.assertLess(time.time() - t0, 3.0)
            self.assertEqual(wait_gone(pids, 3), [], "processes of the terminal outlived it")
        finally:
            for p in pids:
                if not gone(p):
                    os.kill(p, signal.SIGKILL)
            if server.proc.poll() is None:
                server.proc.kill()
                server.proc.wait()
            server.close()

    def test_stdin_closed(self):
        self.run_case(Server(), lambda s, tid: s.proc.stdin.close())

    def test_terminal_close(self):
        def close(s, tid):
            s.request("terminal/close", {"terminalId": tid})
        self.run_case(Server(), close, server_ends=False)

    def test_ecp_stop_of_a_socket_server(self):
        self.run_case(SocketServer(), lambda s, tid: s.request("ecp/stop"))

    def test_sigterm_to_a_socket_server(self):
        self.run_case(SocketServer(), lambda s, tid: s.proc.send_signal(signal.SIGTERM))


class EndOfInputWhileAModelStreams(unittest.TestCase):
    """The client closes the server's stdin while a model streams and
    reads nothing more: the server must not wait for it to read."""

    def test_the_server_and_its_terminal_end_at_once(self):
        mock = MockLLM()
        mock.add({"text": ["tick " * 2000] * 600, "delay": 0.02})
        env = {k: v for k, v in os.environ.items() if k not in ("ECPD_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY")}
        env.update(OPENAI_API_KEY="sk-test", OPENAI_BASE_URL="http://127.0.0.1:%d/v1" % mock.port)
        server = Server(env)
        pids = []
        try:
            tid, shell, job, detached = start_shell_with_deaf_jobs(server)
            pids = [shell, job, detached]
            server.request("notifications/subscribe", {"events": ["chat/*"]})
            chat = server.request("chat/prompt", {"message": "stream"})
            self.assertEqual(chat["status"], "prompting")
            time.sleep(1.0)  # the stream fills the pipe nobody reads any more
            t0 = time.time()
            server.proc.stdin.close()
            server.proc.wait(timeout=20)
            self.assertLess(time.time() - t0, 3.0)
            self.assertEqual(server.proc.returncode, 0)
            self.assertEqual(wait_gone(pids, 3), [], "processes of the terminal outlived the server")
        finally:
            for p in pids:
                if not gone(p):
                    os.kill(p, signal.SIGKILL)
            if server.proc.poll() is None:
                server.proc.kill()
                server.proc.wait()
            server.proc.stdout.close()
            server.close()
            mock.close()


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
