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
import socket
import struct
import subprocess
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


def memory_limit():
    """What bounds the server's memory: none under AddressSanitizer, whose shadow memory is terabytes of
    address space (an unbounded read there is seen by the ping that never comes, as it is anyway)."""
    with open(test_session.ECPD, "rb") as f:
        return None if b"__asan_init" in f.read() else limit_memory


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
        s = self.server(preexec=memory_limit())
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


class FakePostgres:
    """A listener that answers a PostgreSQL startup by asking for the password in clear text, as any server
    may, and keeps what it is sent."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.port = self.sock.getsockname()[1]
        self.received = b""
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            conn.settimeout(5)
            try:
                self._session(conn)
            except (OSError, struct.error):
                pass
            conn.close()

    def _read_message(self, conn, typed):
        head = conn.recv(5 if typed else 4, socket.MSG_WAITALL)
        length = struct.unpack("!I", head[-4:])[0]
        body = conn.recv(length - 4, socket.MSG_WAITALL) if length > 4 else b""
        self.received += head + body
        return head, body

    def _session(self, conn):
        _, body = self._read_message(conn, False)
        if body[:4] == struct.pack("!I", 80877103):  # SSLRequest: no
            conn.sendall(b"N")
            self._read_message(conn, False)
        conn.sendall(b"R" + struct.pack("!II", 8, 3))  # AuthenticationCleartextPassword
        self._read_message(conn, True)
        message = b"SFATAL\0C28P01\0Mno\0\0"
        conn.sendall(b"E" + struct.pack("!I", 4 + len(message)) + message)

    def close(self):
        self.sock.close()


class ProjectConnectionSecretTests(Base):
    """A project connection (the workspace's .ecpd/connections.json) names a host and one of the user's secrets
    as its password: connecting would hand the user's secret to the repository's host."""

    SECRET = "users-own-pa55word"

    def setUp(self):
        super().setUp()
        self.pg = FakePostgres()
        with open(os.path.join(self.ws, ".ecpd", "connections.json"), "w") as f:
            json.dump({"connections": [{"id": "prod", "name": "Production", "type": "postgres",
                                        "host": "127.0.0.1", "port": self.pg.port, "database": "app",
                                        "username": "admin", "passwordSecret": "db.password",
                                        "connectionTimeout": 3000}]}, f)

    def tearDown(self):
        self.pg.close()
        super().tearDown()

    def test_an_untrusted_workspace_gets_no_secret_and_a_trusted_one_does(self):
        s = self.server()
        s.call("secret/set", {"key": "db.password", "value": self.SECRET})
        err = s.error("database/connect", {"connectionId": "prod"})
        self.assertIn("passwordSecret", err["message"])
        self.assertIn("trust", err["message"])
        self.assertNotIn(self.SECRET.encode(), self.pg.received, "the user's secret went to the repository's host")
        self.assertEqual(self.pg.received, b"", "nothing was sent at all")
        # Once the user trusts the folder the connection is the user's own and connects as configured.
        s.call("workspace/trust", {"uri": "file://" + self.ws, "trusted": True})
        s.error("database/connect", {"connectionId": "prod"})  # the fake server refuses the password
        self.assertIn(self.SECRET.encode(), self.pg.received)

    def test_a_global_connection_still_gets_its_secret(self):
        s = self.server()
        s.call("secret/set", {"key": "db.password", "value": self.SECRET})
        cid = s.call("database/createConnection", {"config": {
            "name": "mine", "type": "postgres", "host": "127.0.0.1", "port": self.pg.port, "database": "app",
            "username": "me", "passwordSecret": "db.password", "connectionTimeout": 3000}})["connectionId"]
        s.error("database/connect", {"connectionId": cid})
        self.assertIn(self.SECRET.encode(), self.pg.received)


class ConnectionsSaveTests(Base):
    """Saving a project connection writes <workspace>/.ecpd/connections.json through a temporary file beside
    it; the repository decides what is at that name and what .ecpd is."""

    def create_project_connection(self, s, name="mine"):
        return s.call("database/createConnection", {"config": {
            "name": name, "type": "sqlite", "path": "x.db", "scope": "project"}})["connectionId"]

    def saved_names(self, timeout=10):
        path = os.path.join(self.ws, ".ecpd", "connections.json")
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                with open(path) as f:
                    return [c["name"] for c in json.load(f)["connections"]]
            except (OSError, ValueError):
                time.sleep(0.05)
        return None

    def test_a_link_at_the_temporary_name_is_not_written_through(self):
        victim = os.path.join(self.tmp, "victim.txt")
        with open(victim, "w") as f:
            f.write("the user's file\n")
        os.symlink(victim, os.path.join(self.ws, ".ecpd", "connections.json.tmp"))
        s = self.server()
        self.create_project_connection(s)
        self.assertEqual(self.saved_names(), ["mine"])
        with open(victim) as f:
            self.assertEqual(f.read(), "the user's file\n", "the save wrote through the repository's link")
        self.assertFalse(os.path.islink(os.path.join(self.ws, ".ecpd", "connections.json")))
        s.kill()
        s = self.server()  # what was saved is read again
        names = [c["name"] for c in s.call("database/listConnections", {"scope": "project"})["connections"]]
        self.assertEqual(names, ["mine"])

    def test_a_fifo_at_the_temporary_name_holds_nothing_up(self):
        os.mkfifo(os.path.join(self.ws, ".ecpd", "connections.json.tmp"))
        s = self.server()
        self.create_project_connection(s)
        self.assertEqual(self.saved_names(), ["mine"], "the save waited on the FIFO")
        self.assert_alive(s)

    def test_a_linked_ecpd_folder_is_not_written_into(self):
        elsewhere = os.path.join(self.tmp, "elsewhere")
        os.makedirs(elsewhere)
        os.rmdir(os.path.join(self.ws, ".ecpd"))
        os.symlink(elsewhere, os.path.join(self.ws, ".ecpd"))
        s = self.server()
        self.create_project_connection(s)
        s.call("database/listConnections", {})
        time.sleep(0.5)
        self.assertEqual(os.listdir(elsewhere), [], "the save followed the repository's link out of it")
        self.assert_alive(s)


class GrepTests(Base):
    """file/grep over large files that change while they are searched."""

    def test_a_file_shrinking_while_searched_leaves_the_server_serving(self):
        # A mapped file that shrinks turns the pages past its new end into SIGBUS: a rotated log would end
        # the server. Grep a 48 MiB file over and over while another process cuts it and grows it back.
        big = os.path.join(self.ws, "big.log")
        block = (b"x" * 1023 + b"\n") * 1024
        with open(big, "wb") as f:
            for _ in range(48):
                f.write(block)
        stop = threading.Event()

        def churn():
            while not stop.is_set():
                os.truncate(big, 4096)
                os.truncate(big, 48 << 20)

        churner = threading.Thread(target=churn, daemon=True)
        churner.start()
        s = self.server()
        try:
            deadline = time.time() + 8
            while time.time() < deadline:
                answer = s.response(s.send("file/grep", {"pattern": "needle", "baseUri": "file://" + self.ws}))
                self.assertIn("result", answer)
        finally:
            stop.set()
            churner.join()
        self.assert_alive(s)

    def test_lines_across_the_pieces_of_a_large_file_are_found_with_their_numbers(self):
        lines, size, expected = [], 0, []
        piece = 16 << 20
        marks = set()
        i = 0
        while size < 2 * piece + (4 << 20):
            if piece - 300 < size < piece + 300 or 2 * piece - 300 < size < 2 * piece + 300:
                marks.add(i)
            if i == 1000:
                line = "z" * (17 << 20) + " needle long"  # longer than a piece
            elif i in marks or i % 50000 == 7:
                line = "needle %d" % i
            else:
                line = "y" * (i % 190)
            if "needle" in line:
                expected.append((i, line.index("needle")))
            lines.append(line)
            size += len(line) + 1
            i += 1
        with open(os.path.join(self.ws, "big.txt"), "w") as f:
            f.write("\n".join(lines))  # the last line has no newline
        self.assertTrue(marks)
        s = self.server()
        found = s.call("file/grep", {"pattern": "needle", "baseUri": "file://" + self.ws, "maxResults": 10000})
        got = [(m["line"], m["column"]) for m in found["matches"]]
        self.assertEqual(got, expected)


class AcpTests(Base):
    """`ecpd --acp`: the model's write_file is shown to the client as a diff against the file as it is."""

    def test_a_write_to_a_fifo_leaves_the_server_answering(self):
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "agent"))
        from mock_llm import MockLLM
        os.mkfifo(os.path.join(self.ws, "pipe"))
        mock = MockLLM()
        self.addCleanup(mock.close)
        mock.add({"tools": [{"id": "c1", "name": "write_file",
                             "arguments": [json.dumps({"path": "pipe", "content": "x"})]}]}, {"text": ["ok"]})
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("OPENAI", "ANTHROPIC", "OLLAMA", "ECPD_MODEL"))}
        env.update(OPENAI_API_KEY="sk-test", OPENAI_BASE_URL="http://127.0.0.1:%d/v1" % mock.port)
        p = subprocess.Popen([os.path.abspath(test_session.ECPD), "--acp", "--workspace", self.ws,
                              "--data-dir", os.path.join(self.tmp, "data")], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=self.ws)
        self.addCleanup(p.wait)
        self.addCleanup(p.kill)
        answers = {}
        lock = threading.Condition()

        def read():
            for line in p.stdout:
                msg = json.loads(line)
                if "id" in msg and "method" not in msg:
                    with lock:
                        answers[msg["id"]] = msg
                        lock.notify_all()

        threading.Thread(target=read, daemon=True).start()

        def call(id_, method, params, timeout=10):
            p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": id_, "method": method, "params": params}) + "\n")
                          .encode())
            p.stdin.flush()
            with lock:
                lock.wait_for(lambda: id_ in answers, timeout)
            return answers.get(id_)

        self.assertIsNotNone(call(1, "initialize", {"protocolVersion": 1, "clientCapabilities": {}}))
        session = call(2, "session/new", {"cwd": self.ws, "mcpServers": []})["result"]["sessionId"]
        p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {
            "sessionId": session, "prompt": [{"type": "text", "text": "write"}]}}) + "\n").encode())
        p.stdin.flush()
        deadline = time.time() + 10
        while len(mock.requests) < 1 and time.time() < deadline:
            time.sleep(0.05)
        time.sleep(1)
        self.assertIsNotNone(call(4, "session/new", {"cwd": self.ws, "mcpServers": []}),
                             "the server stopped answering once the model named a FIFO")


class GitBlameTests(Base):
    """git keeps symbolic links, so a clone's tracked file can be a link to /dev/zero."""

    def test_blaming_a_link_to_an_endless_device_leaves_the_server_serving(self):
        subprocess.run(["git", "init", "-q", self.ws], check=True)
        os.symlink("/dev/zero", os.path.join(self.ws, "zero"))
        subprocess.run(["git", "-C", self.ws, "add", "zero"], check=True)
        subprocess.run(["git", "-C", self.ws, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit",
                        "-qm", "a link"], check=True)
        s = self.server(preexec=memory_limit())
        s.call("initialize", {})
        answers = []
        waiter = threading.Thread(target=lambda: answers.append(s.response(
            s.send("git/blame", {"uri": "file://" + self.ws, "path": "zero"}), timeout=20)), daemon=True)
        waiter.start()
        waiter.join(20)
        self.assert_alive(s)
        # git blames a link as its text, and so does the server: the one line is the target's name
        self.assertEqual(len(answers), 1, "git/blame did not answer")
        self.assertIn("result", answers[0], answers[0])
        self.assertIn("/dev/zero", json.dumps(answers[0]["result"]))


if __name__ == "__main__":
    test_session.ECPD = sys.argv.pop(1)
    unittest.main(verbosity=2)
