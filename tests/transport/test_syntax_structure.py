#!/usr/bin/env python3
"""Syntax structure through the real ecpd binary: folds, selection ranges,
indent and symbols of files opened from a workspace, their errors, and a
large file answered in bounded time while the server keeps serving.

usage: test_syntax_structure.py ECPD
"""
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

ECPD = None

C_FILE = """/*
 * Several lines
 * of comment.
 */
int add(int a, int b)
{
    if (a) {
        return a + b;
    }
    return b;
}
"""

PY_FILE = """class Stack:
    def push(self, x):
        self.items.append(x)

    def pop(self):
        return self.items.pop()
"""


class Server:
    """One ecpd on stdio; requests are newline-delimited JSON."""

    def __init__(self, tmp, workspace):
        cmd = [ECPD, "--stdio", "--data-dir", os.path.join(tmp, "data"), "--workspace", workspace]
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.buf = bytearray()
        self.next_id = 1

    def _line(self, timeout):
        deadline = time.time() + timeout
        while True:
            end = self.buf.find(b"\n")
            if end >= 0:
                break
            if time.time() > deadline:
                raise TimeoutError("no message from ecpd")
            chunk = self.p.stdout.read1(1 << 20)
            if not chunk:
                self.p.wait(10)
                raise EOFError("ecpd closed stdout (exit %s): %s" %
                               (self.p.returncode, self.p.stderr.read().decode(errors="replace")[-2000:]))
            self.buf += chunk
        line = bytes(self.buf[:end])
        del self.buf[:end + 1]
        return json.loads(line)

    def send(self, method, params=None):
        id_ = self.next_id
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": id_, "method": method}
        if params is not None:
            msg["params"] = params
        self.p.stdin.write((json.dumps(msg) + "\n").encode())
        self.p.stdin.flush()
        return id_

    def responses(self, ids, timeout=60):
        """The responses to ids, in the order they arrive."""
        got = []
        while len(got) < len(ids):
            m = self._line(timeout)
            if m.get("id") in ids:
                got.append(m)
        return got

    def response(self, method, params=None, timeout=60):
        return self.responses([self.send(method, params)], timeout)[0]

    def call(self, method, params=None):
        m = self.response(method, params)
        if "error" in m:
            raise AssertionError("%s failed: %s" % (method, m["error"]))
        return m["result"]

    def error(self, method, params=None):
        m = self.response(method, params)
        assert "error" in m, "%s should have failed: %s" % (method, str(m)[:300])
        return m["error"]

    def close(self):
        self.p.stdin.close()
        code = self.p.wait(30)
        self.p.stdout.close()
        self.p.stderr.close()
        return code


class SyntaxStructureTests(unittest.TestCase):
    def setUp(self):
        self.tmpdir = tempfile.TemporaryDirectory(prefix="ecpd-structure-")
        self.ws = os.path.join(self.tmpdir.name, "ws")
        os.mkdir(self.ws)
        self.s = Server(self.tmpdir.name, self.ws)

    def tearDown(self):
        if self.s.p.poll() is None:
            self.s.p.kill()
            self.s.p.wait(10)
        self.tmpdir.cleanup()

    def open(self, name, text):
        path = os.path.join(self.ws, name)
        with open(path, "w") as f:
            f.write(text)
        doc = self.s.call("document/open", {"uri": "file://" + path})["documentId"]
        for _ in range(1000):
            if self.s.call("syntax/documentTokens", {"documentId": doc, "startLine": 0, "endLine": 0})["settled"]:
                return doc
            time.sleep(0.01)
        self.fail("%s never settled" % name)

    def test_methods_on_real_files(self):
        c = self.open("a.c", C_FILE)
        folds = self.s.call("syntax/foldingRanges", {"documentId": c})["ranges"]
        self.assertIn({"startLine": 0, "endLine": 3, "kind": "comment"}, folds)
        self.assertIn({"startLine": 5, "endLine": 9}, folds)
        self.assertIn({"startLine": 6, "endLine": 7}, folds)

        sel = self.s.call("syntax/selectionRanges",
                          {"documentId": c, "positions": [{"line": 7, "column": 15}]})["ranges"][0]
        chain = []
        while sel:
            chain.append(sel["range"])
            sel = sel.get("parent")
        self.assertEqual(chain[0], {"start": {"line": 7, "column": 15}, "end": {"line": 7, "column": 16}})
        self.assertIn({"start": {"line": 4, "column": 0}, "end": {"line": 10, "column": 1}}, chain)
        self.assertEqual(chain[-1], {"start": {"line": 0, "column": 0}, "end": {"line": 11, "column": 0}})

        self.assertEqual(self.s.call("syntax/indent", {"documentId": c, "line": 6}), {"indent": "        "})
        symbols = self.s.call("syntax/symbols", {"documentId": c})["symbols"]
        self.assertEqual([(s["name"], s["kind"]) for s in symbols], [("add", 12)])

        py = self.open("b.py", PY_FILE)
        self.assertEqual(self.s.call("syntax/indent", {"documentId": py, "line": 4}), {"indent": "        "})
        symbols = self.s.call("syntax/symbols", {"documentId": py})["symbols"]
        self.assertEqual(len(symbols), 1)
        self.assertEqual(symbols[0]["name"], "Stack")
        self.assertEqual([(s["name"], s["kind"]) for s in symbols[0]["children"]], [("push", 6), ("pop", 6)])

        err = self.s.error("syntax/selectionRanges",
                           {"documentId": c, "positions": [{"line": 0, "column": 0}] * 1001})
        self.assertEqual(err["code"], -32602)
        self.assertIn("positions", err["message"])
        for method in ("syntax/foldingRanges", "syntax/symbols"):
            self.assertEqual(self.s.error(method, {"documentId": "nope"})["code"], -32001)
        self.assertEqual(self.s.error("syntax/indent", {"documentId": "nope", "line": 0})["code"], -32001)

        listed = {m["name"] for m in self.s.call("ecp/methods", {"namespace": "syntax"})["methods"]}
        for method in ("syntax/foldingRanges", "syntax/selectionRanges", "syntax/indent", "syntax/symbols"):
            self.assertIn(method, listed)
        self.assertEqual(self.s.close(), 0)

    def test_large_file_is_bounded(self):
        # 20,000 functions of 5 lines: more folds and symbols than either keeps
        body = "".join("int f%d(int x)\n{\n    if (x) {\n        return %d;\n    }\n    return 0;\n}\n" % (i, i)
                       for i in range(20000))
        c = self.open("big.c", body)
        t0 = time.time()
        folds = self.s.call("syntax/foldingRanges", {"documentId": c})["ranges"]
        fold_s = time.time() - t0
        self.assertEqual(len(folds), 5000)
        t0 = time.time()
        symbols = self.s.call("syntax/symbols", {"documentId": c})["symbols"]
        symbol_s = time.time() - t0
        self.assertEqual(len(symbols), 10000)
        positions = [{"line": i * 7 + 3, "column": 15} for i in range(1000)]
        t0 = time.time()
        ranges = self.s.call("syntax/selectionRanges", {"documentId": c, "positions": positions})["ranges"]
        select_s = time.time() - t0
        self.assertEqual(len(ranges), 1000)
        t0 = time.time()
        self.s.call("syntax/indent", {"documentId": c, "line": 139000})
        indent_s = time.time() - t0
        sys.stderr.write("\n%d bytes: folds %.3fs, symbols %.3fs, 1000 selections %.3fs, indent %.3fs\n" %
                         (len(body), fold_s, symbol_s, select_s, indent_s))
        for took in (fold_s, symbol_s, select_s, indent_s):
            self.assertLess(took, 10)
        self.assertEqual(self.s.call("ecp/ping"), self.s.call("ecp/ping"))
        self.assertEqual(self.s.close(), 0)


if __name__ == "__main__":
    ECPD = sys.argv.pop(1)
    unittest.main()
