"""How long a big language server answer holds ecpd's loop, through the real binary.

usage: bench_lsp_results.py ECPD [ROUNDS]

The fake server (fake_server.py big) answers completion with 100,000 items and
references with 50,000 locations. While each answer is on its way, an ecp/ping
is sent every 2 ms: the longest a ping waited is how long the loop was held;
the completion's own round trip is the total. Prints one line per method.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
FAKE = os.path.join(HERE, "fake_server.py")


class Ecpd:
    def __init__(self, ecpd, workspace, data):
        self.p = subprocess.Popen([ecpd, "--stdio", "--workspace", workspace, "--data-dir", data],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.lock = threading.Lock()
        self.next_id = 1
        self.sent = {}
        self.answers = {}
        self.done = threading.Condition()
        threading.Thread(target=self.reader, daemon=True).start()

    def reader(self):
        for line in self.p.stdout:
            now = time.monotonic()
            if len(line) > 1 << 20:
                # parsing it here would delay the pings read after it: only its id is wanted
                head = line[:200].decode()
                msg = {"id": int(re.search(r'"id":\s*(\d+)', head).group(1)), "result": True}
            else:
                msg = json.loads(line)
            if "id" in msg:
                with self.done:
                    self.answers[msg["id"]] = (now, msg, len(line))
                    self.done.notify_all()

    def send(self, method, params):
        with self.lock:
            i = self.next_id
            self.next_id += 1
            self.sent[i] = time.monotonic()
            self.p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n").encode())
            self.p.stdin.flush()
        return i

    def wait(self, i, seconds=120):
        with self.done:
            self.done.wait_for(lambda: i in self.answers, seconds)
            return self.answers[i]

    def call(self, method, params):
        msg = self.wait(self.send(method, params))[1]
        if "error" in msg:
            raise AssertionError("%s: %s" % (method, msg["error"]))
        return msg["result"]


def measure(s, method, params):
    i = s.send(method, params)
    pings = []
    while True:
        with s.done:
            if i in s.answers:
                break
        pings.append(s.send("ecp/ping", {}))
        time.sleep(0.002)
    end, msg, size = s.wait(i)
    assert "result" in msg, msg
    for p in pings:
        s.wait(p)
    waits = [s.answers[p][0] - s.sent[p] for p in pings]
    return end - s.sent[i], max(waits) if waits else 0.0, size


def main():
    ecpd = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    ws = os.path.realpath(tempfile.mkdtemp(prefix="ecpd-lsp-bench-"))
    data = tempfile.mkdtemp(prefix="ecpd-lsp-bench-data-")
    s = Ecpd(ecpd, ws, data)
    s.call("initialize", {"clientInfo": {"name": "bench"}})
    s.call("workspace/trust", {"uri": "file://" + ws, "trusted": True})
    s.call("lsp/setServerConfig", {"languageId": "fake", "config": {"command": sys.executable, "args": [FAKE, "big"]}})
    uri = "file://" + ws + "/a.fake"
    s.call("lsp/documentOpen", {"uri": uri, "languageId": "fake", "content": "one\ntwo\nthree\n"})
    s.call("lsp/start", {"languageId": "fake"})
    pos = {"uri": uri, "position": {"line": 0, "character": 0}}
    for method, params in (("lsp/completion", pos), ("lsp/references", dict(pos, includeDeclaration=True)),
                           ("lsp/references", dict(pos, includeDeclaration=False))):
        rows = [measure(s, method, params) for _ in range(rounds)]
        print("%-15s %s: total %.0f ms, loop held at most %.0f ms (median of %d), %d bytes" % (
            method, "links" if params.get("includeDeclaration") is False else "",
            sorted(r[0] for r in rows)[rounds // 2] * 1000, sorted(r[1] for r in rows)[rounds // 2] * 1000,
            rounds, rows[0][2]))
    # a full-sync server and a big document: what each keystroke costs the loop
    s.call("lsp/setServerConfig", {"languageId": "plaintext",
                                   "config": {"command": sys.executable, "args": [FAKE, "fullsync"]}})
    path = os.path.join(ws, "big.txt")
    with open(path, "w") as f:
        for i in range(400000):
            f.write("line %08d with \"quotes\" and a tab\t\n" % i)
    s.call("lsp/start", {"languageId": "plaintext"})
    doc = s.call("document/open", {"uri": "file://" + path})["documentId"]
    rows = []
    for k in range(rounds * 3):
        edit = {"documentId": doc, "edits": [{"range": {"start": {"line": 0, "column": 0},
                                                        "end": {"line": 0, "column": 0}}, "text": "x"}]}
        rows.append(measure(s, "document/edit", edit))
        time.sleep(0.3)
    print("%-15s : total %.0f ms, loop held at most %.0f ms (median of %d), a %d MB document, full sync" % (
        "document/edit", sorted(r[0] for r in rows)[len(rows) // 2] * 1000,
        sorted(r[1] for r in rows)[len(rows) // 2] * 1000, len(rows), os.path.getsize(path) >> 20))
    s.p.stdin.close()
    s.p.wait(10)


if __name__ == "__main__":
    main()
