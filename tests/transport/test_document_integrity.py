#!/usr/bin/env python3
"""Saves that cannot finish, through the real ecpd binary.

usage: test_document_integrity.py ECPD

A save past the file size limit (RLIMIT_FSIZE, as `ulimit -f` sets it) must
fail with its cause instead of killing the server with SIGXFSZ, and leave the
file and its directory as they were. A server killed (-9) in the middle of a
save leaves its temporary file behind; the next server that opens the file
removes it, and nothing else.
"""
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
import unittest

ECPD = None


class Server:
    """ecpd --stdio, newline-delimited JSON; notifications are skipped."""

    def __init__(self, tmp, preexec_fn=None):
        self.p = subprocess.Popen([ECPD, "--stdio", "--data-dir", os.path.join(tmp, "data")],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  preexec_fn=preexec_fn)
        self.buf = b""
        self.next_id = 0

    def send(self, method, params=None):
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.p.stdin.write((json.dumps(msg) + "\n").encode())
        self.p.stdin.flush()
        return self.next_id

    def wait(self, id_):
        while True:
            i = self.buf.find(b"\n")
            while i < 0:
                chunk = self.p.stdout.read1(1 << 16)
                if not chunk:
                    raise EOFError("the server closed its output (exit status %r)" % self.p.poll())
                self.buf += chunk
                i = self.buf.find(b"\n")
            line, self.buf = self.buf[:i], self.buf[i + 1:]
            msg = json.loads(line)
            if msg.get("id") == id_:
                return msg

    def call(self, method, params=None):
        msg = self.wait(self.send(method, params))
        if "error" in msg:
            raise AssertionError("%s failed: %r" % (method, msg["error"]))
        return msg["result"]

    def close(self):
        try:
            self.p.stdin.close()
        except BrokenPipeError:
            pass
        self.p.wait(10)
        self.p.stdout.close()
        self.p.stderr.close()


def leftovers(directory):
    return sorted(n for n in os.listdir(directory) if ".ecpd-" in n)


class SaveTests(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ecpd-integrity-")
        self.servers = []

    def tearDown(self):
        for s in self.servers:
            if s.p.poll() is None:
                s.p.kill()
            s.close()
        subprocess.run(["rm", "-rf", self.tmp])

    def server(self, preexec_fn=None):
        s = Server(self.tmp, preexec_fn)
        self.servers.append(s)
        return s

    def test_save_past_the_file_size_limit(self):
        limit = 1 << 20

        def low_limit():
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

        work = os.path.join(self.tmp, "work")
        os.mkdir(work)
        plain = os.path.join(work, "plain.txt")
        linked = os.path.join(work, "linked.txt")
        other = os.path.join(work, "other-name.txt")
        for path in (plain, linked):
            with open(path, "w") as f:
                f.write("original\n")
        os.link(linked, other)
        s = self.server(low_limit)
        big = "x" * (2 * limit) + "\n"
        for path in (plain, linked):
            doc = s.call("document/open", {"uri": "file://" + path})["documentId"]
            s.call("document/setContent", {"documentId": doc, "content": big})
            result = s.call("document/save", {"documentId": doc})
            # The cause, not a dead server; the file as it was, nothing beside it.
            self.assertFalse(result["success"], result)
            self.assertNotIn("conflict", result)
            self.assertEqual(result["error"], "Failed to save %s: write failed: File too large" % path)
            with open(path) as f:
                self.assertEqual(f.read(), "original\n")
            self.assertEqual(leftovers(work), [])
            self.assertTrue(s.call("document/isDirty", {"documentId": doc})["isDirty"])
            # What fits is saved as usual.
            s.call("document/setContent", {"documentId": doc, "content": "small\n"})
            self.assertTrue(s.call("document/save", {"documentId": doc})["success"])
            with open(path) as f:
                self.assertEqual(f.read(), "small\n")
        with open(other) as f:
            self.assertEqual(f.read(), "small\n")
        self.assertEqual(os.stat(linked).st_nlink, 2)
        self.assertEqual(s.call("ecp/ping", [1]), [1])
        self.assertIsNone(s.p.poll())

    def test_kill_during_a_save_then_the_leftover_is_swept(self):
        work = os.path.join(self.tmp, "work")
        os.mkdir(work)
        path = os.path.join(work, "big.txt")
        line = "a line of a file large enough that writing it takes a while\n"
        with open(path, "w") as f:
            f.write(line * (96 * 1024 * 1024 // len(line)))
        original_size = os.path.getsize(path)
        decoys = [".big.txt.ecpd-notours", ".big.txt.ecpd-0123456789ab.keep", ".other.txt.ecpd-0123456789ab"]
        for name in decoys:
            with open(os.path.join(work, name), "w") as f:
                f.write("not a leftover of big.txt")

        s = self.server()
        doc = s.call("document/open", {"uri": "file://" + path})["documentId"]
        temp = None
        for attempt in range(20):
            s.call("document/insert", {"documentId": doc, "position": {"line": 0, "column": 0}, "text": "edit\n"})
            s.send("document/save", {"documentId": doc})
            deadline = time.time() + 30
            while temp is None and time.time() < deadline:
                found = [n for n in leftovers(work) if n.startswith(".big.txt.ecpd-") and n not in decoys]
                if found:
                    temp = found[0]
                    s.p.kill()  # SIGKILL: no chance to clean up
                    break
                if os.path.getsize(path) != original_size:
                    break  # the save won the race: try again
                time.sleep(0.0005)
            if temp:
                break
            original_size = os.path.getsize(path)
        self.assertIsNotNone(temp, "never caught a save in the act")
        s.p.wait(10)
        self.assertEqual(s.p.returncode, -signal.SIGKILL)
        self.assertTrue(os.path.exists(os.path.join(work, temp)))
        # The file itself is whole: the old one or a complete new one.
        size = os.path.getsize(path)
        self.assertEqual((size - original_size) % len("edit\n"), 0)

        s2 = self.server()
        s2.call("document/open", {"uri": "file://" + path})
        deadline = time.time() + 20
        while os.path.exists(os.path.join(work, temp)) and time.time() < deadline:
            time.sleep(0.01)
        self.assertFalse(os.path.exists(os.path.join(work, temp)), "the leftover was not swept")
        self.assertEqual(sorted(leftovers(work)), sorted(decoys))


if __name__ == "__main__":
    ECPD = os.path.abspath(sys.argv[1])
    unittest.main(argv=[sys.argv[0], "-v"])
