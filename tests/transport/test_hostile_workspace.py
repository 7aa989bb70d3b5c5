#!/usr/bin/env python3
"""A hostile repository's files against the real ecpd binary.

usage: test_hostile_workspace.py ECPD

What a cloned repository can hold besides text: symbolic links to devices
and to the server's own input, FIFOs, and configuration that names the
user's secrets. None of it may stop the server from starting, eat its
memory, or send the user's secrets where the repository says.
"""
import json
import os
import resource
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_session  # noqa: E402
from test_session import Server  # noqa: E402

MEMORY_LIMIT = 1 << 30  # far above what a server serving one workspace needs


def limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


class Base(unittest.TestCase):
    def setUp(self):
        self.tmpdir = test_session.tempfile.TemporaryDirectory(prefix="ecpd-hostile-")
        self.tmp = os.path.realpath(self.tmpdir.name)
        self.ws = os.path.join(self.tmp, "ws")
        os.makedirs(os.path.join(self.ws, ".ecpd"))
        self.servers = []

    def tearDown(self):
        for s in self.servers:
            if s.p.poll() is None:
                s.kill()
        self.tmpdir.cleanup()

    def server(self, *args, **kw):
        kw.setdefault("workspace", self.ws)
        s = Server(self.tmp, *args, **kw)
        self.servers.append(s)
        return s

    def assert_alive(self, s, timeout=10):
        """A ping answered within timeout (a server blocked in a read answers nothing, so a thread waits)."""
        answer = []
        waiter = threading.Thread(target=lambda: answer.append(s.response(s.send("ecp/ping", {}), timeout)),
                                  daemon=True)
        waiter.start()
        waiter.join(timeout)
        if not answer:
            s.kill()
            self.fail("no answer to a ping in %ds: the server is stuck (or died: %s)" % (timeout, s.p.returncode))
        self.assertEqual(answer[0].get("result"), {}, answer[0])
        self.assertIsNone(s.p.poll(), "the server died")


class ConnectionsFileTests(Base):
    """<workspace>/.ecpd/connections.json is read when the server starts."""

    def plant(self, target):
        os.symlink(target, os.path.join(self.ws, ".ecpd", "connections.json"))

    def test_a_link_to_an_endless_device_is_not_read(self):
        # git keeps symbolic links: a clone can hold this one. Read to its end it never ends.
        self.plant("/dev/zero")
        s = self.server(preexec=limit_memory)
        self.assert_alive(s, timeout=20)
        self.assertEqual(s.call("database/listConnections", {}).get("connections", []), [])

    def test_a_link_to_the_servers_own_input_is_not_read(self):
        # /dev/stdin is the client's pipe: reading it would swallow the client's messages and wait forever.
        self.plant("/dev/stdin")
        s = self.server()
        self.assert_alive(s, timeout=20)

    def test_a_fifo_is_not_opened(self):
        os.mkfifo(os.path.join(self.ws, ".ecpd", "connections.json"))
        s = self.server()
        self.assert_alive(s, timeout=20)

    def test_a_file_too_large_is_refused_and_a_normal_one_still_read(self):
        path = os.path.join(self.ws, ".ecpd", "connections.json")
        with open(path, "w") as f:
            f.write("[" + " " * (64 << 20) + "]")
        s = self.server()
        self.assert_alive(s, timeout=20)
        s.kill()
        with open(path, "w") as f:
            json.dump({"connections": [{"id": "p1", "name": "local", "type": "sqlite", "path": "x.db"}]}, f)
        s = self.server()
        names = [c["name"] for c in s.call("database/listConnections", {})["connections"]]
        self.assertEqual(names, ["local"])


if __name__ == "__main__":
    test_session.ECPD = sys.argv.pop(1)
    unittest.main(verbosity=2)
