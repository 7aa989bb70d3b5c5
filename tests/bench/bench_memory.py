#!/usr/bin/env python3
"""B15: the server's memory through a huge replace-all and its undo.

usage: bench_memory.py ECPD [--mb N] [--way edit|replace]

Writes a file of code-like text (50 MB by default) where one common word
occurs about 658,000 times (once a line) and another about 94,000 times,
then, for each of the two ways a client replaces every match (or the one
--way names), on a fresh `ecpd --stdio`:

  edit     one document/edit carrying an edit per match of the common word
           (positions found by the client, as an editor's replace-all does);
  replace  document/replace with `query` and `all` (the server finds the
           matches; at most 100,000, hence the rarer word, and no run of
           this way for a file of more than 53 MB);

opens the file, replaces, undoes, replaces again and undoes again, pausing a
second after each step as a person would (the hot-exit journal writes the
dirty text meanwhile), and reads the server's /proc/PID/status: VmHWM (the
peak resident set) and VmRSS once it is done. The client reads every
notification, as an editor does. Prints one line per way:

  B15 way=edit file_mb=50.0 matches=657904 open_mb=... peak_mb=... after_mb=...
      peak_ratio=... after_ratio=... edit_s=... undo_s=...

Then makes the edit again, lets the journal hold it, saves, and prints what
the data directory (the hot-exit store) holds before and after the save:

  B15-disk way=edit file_mb=50.0 journaled_mb=... saved_mb=... saved_ratio=...

The comparator is the file's size: the target is a resident set of at most
three times it, and a store of at most a tenth of it once saved.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

COMMON = "value"
COMMON_NEW = "amount"
RARE = "count"
RARE_NEW = "total"
PAUSE_S = 1.0

# Lines of about 76 bytes, each holding the common word once; one line in
# seven holds the rare word too.
TEMPLATES = [
    "    int result_{i} = compute(value, {i}, flags_{j}); /* step {j} of the loop */\n",
    "    if (value > limit_{j}) return handle_error(state, {i}, \"out of range\");\n",
    "    buffer[{i}] = scale_factor * value + offset_{j}; /* keep it aligned */\n",
    "    for (size_t k = 0; k < count; k++) sum_{j} += value * weights[k];\n",
    "    log_debug(\"the current value is %d at %d\", current, {i}); // {j}\n",
    "    struct item *next_{i} = list_next(head, value, {j}); /* may be NULL */\n",
    "    total_{j} += weight[{i}] * value; /* accumulate the running sum here */\n",
]


def make_file(path, mb):
    target = int(mb * 1000 * 1000)
    size = 0
    i = 0
    parts = []
    while size < target:
        line = TEMPLATES[i % len(TEMPLATES)].format(i=i, j=i % 97)
        parts.append(line)
        size += len(line)
        i += 1
    text = "".join(parts)
    with open(path, "w") as f:
        f.write(text)
    return text


def status(pid):
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmHWM", "VmRSS"):
                out[k] = int(v.split()[0]) * 1024
    return out


def dir_bytes(path):
    """Bytes of every file under path: the store, its WAL and anything else the server keeps there."""
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(root, name))
            except FileNotFoundError:
                pass
    return total


class Server:
    def __init__(self, ecpd, tmp):
        self.data = tempfile.mkdtemp(dir=tmp)
        self.p = subprocess.Popen([ecpd, "--stdio", "--data-dir", self.data, "--workspace", tmp],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                  bufsize=0, cwd=tmp)
        self.buf = b""
        self.pos = 0  # start of the unread part of buf
        self.next_id = 0
        self.notified_bytes = 0

    def line(self):
        """The next message. A 60 MB notification arrives in pipe-sized reads: they are
        gathered in a list and joined once, not copied into a growing string each time."""
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
                self.buf = chunk
                self.pos = i + 1
                return b"".join(parts)
            parts.append(chunk)

    def call(self, method, params):
        self.next_id += 1
        self.p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params},
                                      separators=(",", ":")).encode() + b"\n")
        while True:
            line = self.line()
            # a notification names its method near the start; only answers are parsed
            if b'"method"' in line[:64]:
                self.notified_bytes += len(line)
                continue
            msg = json.loads(line)
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    raise RuntimeError("%s: %s" % (method, msg["error"]))
                return msg["result"]

    def close(self):
        self.p.stdin.close()
        self.p.wait(30)


def edits_for(text, word, new):
    edits = []
    n = len(word)
    for line_no, line in enumerate(text.split("\n")):
        for m in re.finditer(word, line):
            c = m.start()
            edits.append({"range": {"start": {"line": line_no, "column": c},
                                    "end": {"line": line_no, "column": c + n}}, "text": new})
    return edits


def run(ecpd, tmp, path, file_bytes, way, text):
    srv = Server(ecpd, tmp)
    try:
        srv.call("initialize", {"clientInfo": {"name": "bench_memory"}})
        doc = srv.call("document/open", {"uri": "file://" + path})["documentId"]
        time.sleep(PAUSE_S)
        open_rss = status(srv.p.pid)["VmRSS"]
        if way == "edit":
            edits = edits_for(text, COMMON, COMMON_NEW)
            matches = len(edits)
        edit_s = undo_s = 0.0
        for _ in range(2):
            t = time.perf_counter()
            if way == "edit":
                srv.call("document/edit", {"documentId": doc, "edits": edits})
            else:
                srv.call("document/setCursor", {"documentId": doc, "position": {"line": 0, "column": 0}})
                r = srv.call("document/replace", {"documentId": doc, "query": RARE, "replacement": RARE_NEW,
                                                  "caseSensitive": True, "all": True})
                if not r.get("success"):
                    raise RuntimeError("document/replace: %s" % r)
                matches = r["replaced"]
            edit_s += time.perf_counter() - t
            time.sleep(PAUSE_S)
            t = time.perf_counter()
            srv.call("document/undo", {"documentId": doc})
            undo_s += time.perf_counter() - t
            time.sleep(PAUSE_S)
        info = srv.call("document/info", {"documentId": doc})
        if info.get("isDirty"):
            raise RuntimeError("the document is still dirty after the undo")
        st = status(srv.p.pid)
        mb = 1000.0 * 1000.0
        print("B15 way=%s file_mb=%.1f matches=%d open_mb=%.0f peak_mb=%.0f after_mb=%.0f peak_ratio=%.2f "
              "after_ratio=%.2f edit_s=%.2f undo_s=%.2f"
              % (way, file_bytes / mb, matches, open_rss / mb, st["VmHWM"] / mb, st["VmRSS"] / mb,
                 st["VmHWM"] / file_bytes, st["VmRSS"] / file_bytes, edit_s / 2, undo_s / 2), flush=True)
        # B15-disk: what the hot-exit store keeps once the text is saved. The edit is made again and left a
        # pause so that the journal holds it, then saved: a saved document needs nothing journaled.
        if way == "edit":
            srv.call("document/edit", {"documentId": doc, "edits": edits})
        else:
            srv.call("document/replace", {"documentId": doc, "query": RARE, "replacement": RARE_NEW,
                                          "caseSensitive": True, "all": True})
        time.sleep(PAUSE_S)
        journaled = dir_bytes(srv.data)
        srv.call("document/save", {"documentId": doc})
        time.sleep(PAUSE_S)
        saved = dir_bytes(srv.data)
        print("B15-disk way=%s file_mb=%.1f journaled_mb=%.1f saved_mb=%.2f saved_ratio=%.3f"
              % (way, file_bytes / mb, journaled / mb, saved / mb, saved / file_bytes), flush=True)
    finally:
        srv.close()


def main():
    ecpd = os.path.abspath(sys.argv[1])
    mb = float(sys.argv[sys.argv.index("--mb") + 1]) if "--mb" in sys.argv else 50.0
    tmp = tempfile.mkdtemp(prefix="ecpd-b15-")
    try:
        path = os.path.join(tmp, "big.txt")
        text = make_file(path, mb)
        file_bytes = os.path.getsize(path)
        ways = [sys.argv[sys.argv.index("--way") + 1]] if "--way" in sys.argv else ["edit", "replace"]
        if text.count(RARE) > 100000 and "replace" in ways:
            print("B15 way=replace skipped: %d matches, more than document/replace takes" % text.count(RARE))
            ways.remove("replace")
        for way in ways:
            run(ecpd, tmp, path, file_bytes, way, text)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
