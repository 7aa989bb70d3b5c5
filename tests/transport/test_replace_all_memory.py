#!/usr/bin/env python3
"""Replace-alls of many matches in big files, through the real ecpd binary.

usage: test_replace_all_memory.py ECPD

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
