#!/usr/bin/env python3
"""The editing commands, find and .editorconfig, through the real ecpd binary.

usage: test_document_editing.py ECPD

Two connections share a document over the Unix socket: one indents, comments
and moves lines at its own cursors while the other's cursors follow the text.
A bad or runaway regular expression is refused without stopping the server.
A save in a workspace whose .editorconfig asks for it trims trailing blanks,
and a server started again reads the trimmed file.
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import unittest

ECPD = None


class Conn:
    """One connection to the socket, newline-delimited JSON; notifications are skipped."""

    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        deadline = time.time() + 20
        while True:
            try:
                self.s.connect(path)
                break
            except (FileNotFoundError, ConnectionRefusedError):
                if time.time() > deadline:
                    raise
                time.sleep(0.05)
        self.buf = b""
        self.next_id = 0

    def send(self, method, params):
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.s.sendall((json.dumps(msg) + "\n").encode())
        return self.next_id

    def wait(self, id_):
        while True:
            i = self.buf.find(b"\n")
            while i < 0:
                chunk = self.s.recv(1 << 16)
                if not chunk:
                    raise EOFError("the server closed the connection")
                self.buf += chunk
                i = self.buf.find(b"\n")
            line, self.buf = self.buf[:i], self.buf[i + 1:]
            msg = json.loads(line)
            if msg.get("id") == id_:
                return msg

    def call(self, method, params):
        msg = self.wait(self.send(method, params))
        if "error" in msg:
            raise AssertionError("%s failed: %r" % (method, msg["error"]))
        return msg["result"]

    def error(self, method, params):
        msg = self.wait(self.send(method, params))
        assert "error" in msg, msg
        return msg["error"]

    def close(self):
        self.s.close()


def at(line, column):
    return {"position": {"line": line, "column": column}}


class EditingTests(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ecpd-editing-")
        self.ws = os.path.join(self.tmp, "ws")
        os.mkdir(self.ws)
        self.sock = os.path.join(self.tmp, "ecpd.sock")
        self.servers = []

    def tearDown(self):
        for p in self.servers:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(10)
        subprocess.run(["rm", "-rf", self.tmp])

    def start(self):
        p = subprocess.Popen([ECPD, "--socket", self.sock, "--workspace", self.ws, "--data-dir",
                              os.path.join(self.tmp, "data")],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.servers.append(p)
        return p

    def stop(self, p):
        p.terminate()
        p.wait(20)

    def test_a_text_for_each_cursor(self):
        """A paste of as many lines as there are cursors puts one line at each,
        in document order whatever order the cursors were set in, as one undo
        step; another client's cursor moves with the text."""
        self.start()
        a, b = Conn(self.sock), Conn(self.sock)
        doc = a.call("document/open", {"uri": "untitled:spread", "content": "one\ntwo\nthree\n"})["documentId"]
        b.call("document/open", {"uri": "untitled:spread"})
        b.call("document/setCursors", {"documentId": doc, "cursors": [at(2, 5)]})
        # set bottom-up, with the middle one selecting "tw"
        a.call("document/setCursors", {"documentId": doc, "cursors": [
            at(2, 5), {"position": {"line": 1, "column": 2}, "selection": {"anchor": {"line": 1, "column": 0},
                                                                          "active": {"line": 1, "column": 2}}},
            at(0, 3)]})
        r = a.call("document/type", {"documentId": doc, "texts": ["=1", "=2", "=3"]})
        self.assertTrue(r["success"], r)
        self.assertEqual(a.call("document/content", {"documentId": doc})["content"], "one=1\n=2o\nthree=3\n")
        cursors = sorted((c["position"]["line"], c["position"]["column"])
                         for c in a.call("document/cursors", {"documentId": doc})["cursors"])
        self.assertEqual(cursors, [(0, 5), (1, 2), (2, 7)])
        self.assertEqual(b.call("document/cursors", {"documentId": doc})["cursors"], [at(2, 7)])
        a.call("document/undo", {"documentId": doc})
        self.assertEqual(a.call("document/content", {"documentId": doc})["content"], "one\ntwo\nthree\n")

        # the wrong number of texts, both forms, or neither, is refused and changes nothing
        e = a.error("document/type", {"documentId": doc, "texts": ["x", "y"]})
        self.assertEqual((e["code"], e["message"]), (-32602, "texts: 2 texts for 3 cursors (one each)"))
        e = a.error("document/type", {"documentId": doc, "text": "x", "texts": ["x", "y", "z"]})
        self.assertEqual((e["code"], e["message"]), (-32602, "text and texts: give one of them, not both"))
        e = a.error("document/type", {"documentId": doc})
        self.assertEqual(e["code"], -32602)
        e = a.error("document/type", {"documentId": doc, "texts": ["x", 2, "z"]})
        self.assertEqual(e["code"], -32602)
        self.assertIn("texts", e["message"])
        self.assertEqual(a.call("document/content", {"documentId": doc})["content"], "one\ntwo\nthree\n")
        a.close()
        b.close()

    def test_two_clients_edit_find_and_save(self):
        with open(os.path.join(self.ws, ".editorconfig"), "w") as f:
            f.write("[*.py]\nindent_style = space\nindent_size = 2\ntrim_trailing_whitespace = true\n")
        path = os.path.join(self.ws, "a.py")
        with open(path, "w") as f:
            f.write("def f():   \nx = 1\ny = 2\n")
        server = self.start()
        a, b = Conn(self.sock), Conn(self.sock)
        doc = a.call("document/open", {"uri": "file://" + path})["documentId"]
        b.call("document/open", {"uri": "file://" + path})
        info = a.call("document/info", {"documentId": doc})
        self.assertEqual(info["indent"], {"style": "spaces", "size": 2})
        self.assertTrue(info["trimTrailingWhitespace"])

        b.call("document/setCursors", {"documentId": doc, "cursors": [at(2, 0)]})
        a.call("document/setCursors", {"documentId": doc, "cursors": [at(1, 0)]})
        r = a.call("document/indent", {"documentId": doc})
        self.assertTrue(r["success"])
        self.assertEqual(r["cursors"], [at(1, 2)])
        r = a.call("document/moveLines", {"documentId": doc, "direction": "down"})
        self.assertEqual(r["cursors"], [at(2, 2)])
        # b's caret was on "y = 2", which moved up past "  x = 1"
        self.assertEqual(b.call("document/cursors", {"documentId": doc})["cursors"], [at(1, 0)])
        a.call("document/toggleComment", {"documentId": doc})
        self.assertEqual(a.call("document/content", {"documentId": doc})["content"],
                         "def f():   \ny = 2\n  # x = 1\n")
        a.call("document/undo", {"documentId": doc})
        self.assertEqual(a.call("document/content", {"documentId": doc})["content"],
                         "def f():   \ny = 2\n  x = 1\n")

        found = b.call("document/find", {"documentId": doc, "query": "[xy] =", "regex": True})
        self.assertEqual(found["total"], 2)
        err = b.error("document/find", {"documentId": doc, "query": "(", "regex": True})
        self.assertEqual(err["code"], -32602)
        self.assertIn("missing closing parenthesis", err["message"])
        b.call("document/setContent", {"documentId": doc, "content": "a" * 40 + "b"})
        err = b.error("document/find", {"documentId": doc, "query": "(a+)+$\\d", "regex": True})
        self.assertEqual(err["code"], -32602)
        # still serving everyone
        self.assertEqual(a.call("document/version", {"documentId": doc})["version"],
                         b.call("document/version", {"documentId": doc})["version"])
        b.call("document/undo", {"documentId": doc})
        self.assertTrue(a.call("document/save", {"documentId": doc})["success"])
        with open(path) as f:
            self.assertEqual(f.read(), "def f():\ny = 2\n  x = 1\n")
        a.close()
        b.close()
        self.stop(server)

        # a server started again reads what was saved
        os.unlink(self.sock) if os.path.exists(self.sock) else None
        self.start()
        c = Conn(self.sock)
        doc = c.call("document/open", {"uri": "file://" + path})["documentId"]
        self.assertEqual(c.call("document/content", {"documentId": doc})["content"], "def f():\ny = 2\n  x = 1\n")
        self.assertFalse(c.call("document/info", {"documentId": doc})["isDirty"])
        c.close()


if __name__ == "__main__":
    ECPD = os.path.abspath(sys.argv[1])
    unittest.main(argv=[sys.argv[0], "-v"])
