#!/usr/bin/env python3
"""Replace-alls of many matches in big files, through the real ecpd binary.

usage: test_replace_all_memory.py ECPD

An 8 MB file with a word on every line is opened over stdio, every match is
replaced with one document/edit (as an editor's replace-all sends it), then
undone, twice. The text is right at each step, the notifications say what
changed, and once it is over the server holds little more than the text:
the step keeps its edits packed rather than two pieces and two copies each,
and what the request and its notification took is given back: less than
twice the file more than with the file just open, where it kept seven
times the file more with a step of edit-by-edit copies, and twelve when
nothing was given back.

document/replace with a query searches the text where it lies when the
tree holds it in one run (a file just read, a text a replace-all rebuilt):
its peak is one new text over the file, not two.
"""
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

ECPD = None
SANITIZED = any(v in os.environ for v in ("ASAN_OPTIONS", "TSAN_OPTIONS", "UBSAN_OPTIONS"))
LINE = "    total_%06d = value + offset; /* keep */\n"


def rss(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def hwm(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


class Stdio:
    """ecpd --stdio, newline-delimited JSON; notifications are counted, not kept."""

    def __init__(self, tmp):
        self.p = subprocess.Popen([ECPD, "--stdio", "--workspace", tmp, "--data-dir", os.path.join(tmp, "data")],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  bufsize=0, cwd=tmp)
        self.buf = b""
        self.pos = 0
        self.next_id = 0
        self.changes = []  # the number of changes of each document/didChange

    def line(self):
        i = self.buf.find(b"\n", self.pos)
        if i >= 0:
            line = self.buf[self.pos:i]
            self.pos = i + 1
            return line
        parts = [self.buf[self.pos:]]
        while True:
            chunk = self.p.stdout.read(1 << 20)
            if not chunk:
                raise EOFError("ecpd exited")
            i = chunk.find(b"\n")
            if i >= 0:
                parts.append(chunk[:i])
                self.buf, self.pos = chunk, i + 1
                return b"".join(parts)
            parts.append(chunk)

    def call(self, method, params):
        self.next_id += 1
        self.p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params},
                                      separators=(",", ":")).encode() + b"\n")
        while True:
            msg = json.loads(self.line())
            if msg.get("method") == "document/didChange":
                self.changes.append(msg["params"]["changes"])
            elif msg.get("id") == self.next_id:
                if "error" in msg:
                    raise AssertionError("%s failed: %r" % (method, msg["error"]))
                return msg["result"]

    def close(self):
        self.p.stdin.close()
        err = self.p.stderr.read().decode(errors="replace")
        self.p.wait(30)
        return err


class ReplaceAllTests(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ecpd-replace-all-")

    def tearDown(self):
        subprocess.run(["rm", "-rf", self.tmp])

    def test_replace_all_and_undo_twice(self):
        lines = 8 * 1000 * 1000 // len(LINE % 0)
        text = "".join(LINE % i for i in range(lines))
        path = os.path.join(self.tmp, "big.txt")
        with open(path, "w") as f:
            f.write(text)
        column = (LINE % 0).index("value")
        edits = [{"range": {"start": {"line": i, "column": column}, "end": {"line": i, "column": column + 5}},
                  "text": "amount"} for i in range(lines)]
        replaced = text.replace("value", "amount")

        srv = Stdio(self.tmp)
        doc = srv.call("document/open", {"uri": "file://" + path})["documentId"]
        time.sleep(0.5)
        opened = rss(srv.p.pid)
        for _ in range(2):
            srv.changes.clear()
            srv.call("document/edit", {"documentId": doc, "edits": edits})
            # one notification, a change per edit, from the last to the first
            self.assertEqual(len(srv.changes), 1)
            self.assertEqual(len(srv.changes[0]), lines)
            self.assertEqual(srv.changes[0][0]["range"]["start"], {"line": lines - 1, "column": column})
            self.assertEqual(srv.changes[0][0]["text"], "amount")
            self.assertEqual(srv.changes[0][-1]["rangeLength"], 5)
            self.assertEqual(srv.call("document/content", {"documentId": doc})["content"], replaced)
            srv.changes.clear()
            srv.call("document/undo", {"documentId": doc})
            self.assertEqual(len(srv.changes), 1)
            self.assertEqual(srv.changes[0][0]["range"]["start"], {"line": 0, "column": column})
            self.assertEqual(srv.changes[0][0]["range"]["end"], {"line": 0, "column": column + 6})
            self.assertEqual(srv.changes[0][0]["text"], "value")
            self.assertEqual(srv.call("document/content", {"documentId": doc})["content"], text)
        self.assertFalse(srv.call("document/info", {"documentId": doc})["isDirty"])
        srv.call("document/redo", {"documentId": doc})
        self.assertEqual(srv.call("document/content", {"documentId": doc})["content"], replaced)
        srv.call("document/undo", {"documentId": doc})
        # what the edits took is given back a second after the last of them
        time.sleep(2.0)
        after = rss(srv.p.pid)
        if not SANITIZED:  # a sanitizer's shadow and quarantine are no measure of ours
            self.assertLess(after - opened, 2 * len(text),
                            "the server holds %.1f MB more than with the file just open (%.1f MB)"
                            % ((after - opened) / 1e6, len(text) / 1e6))
        err = srv.close()
        self.assertNotIn("Sanitizer", err)

    def test_replace_with_query_searches_the_text_in_place(self):
        # a 32 MB file, a match every 16 lines: the search reads the text where
        # it lies, rather than in a copy of it, on top of the new text being built
        line = "    int x_%06d = compute(y, z); /* a line that is long enough */\n"
        lines = 32 * 1000 * 1000 // len(line % 0)
        text = "".join((line % i).replace("compute", "counted") if i % 16 == 0 else line % i for i in range(lines))
        path = os.path.join(self.tmp, "big.c.txt")
        with open(path, "w") as f:
            f.write(text)
        srv = Stdio(self.tmp)
        doc = srv.call("document/open", {"uri": "file://" + path})["documentId"]
        time.sleep(0.5)
        opened = rss(srv.p.pid)
        r = srv.call("document/replace", {"documentId": doc, "query": "counted", "replacement": "computed",
                                          "caseSensitive": True, "all": True})
        self.assertEqual(r["replaced"], (lines + 15) // 16)
        peak = hwm(srv.p.pid)
        self.assertEqual(srv.call("document/content", {"documentId": doc})["content"],
                         text.replace("counted", "computed"))
        if not SANITIZED:
            self.assertLess(peak - opened, 1.6 * len(text),
                            "the replace took %.1f MB more than the file just open (%.1f MB)"
                            % ((peak - opened) / 1e6, len(text) / 1e6))
        err = srv.close()
        self.assertNotIn("Sanitizer", err)


if __name__ == "__main__":
    ECPD = os.path.abspath(sys.argv[1])
    unittest.main(argv=[sys.argv[0], "-v"])
