"""The three floods of notifications no request caused, through the real ecpd
on stdio, and the time an `ecp/ping` on the same connection waits meanwhile.

- terminal: a terminal runs `yes | head -c 60000000`
- chat: the scripted model (tests/agent/mock_llm.py, in a process of its own)
  streams 10,000 chunks of 4 KB
- watch: 50,000 files appear, from another process, in a folder the client
  watches with `file/watch`

The client reads in a thread of its own and looks only at what it must: an
answer is parsed, a notification is counted by its method. A client that
parsed every message would measure its own interpreter, not the server.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MOCK_LLM = os.path.join(HERE, "..", "agent", "mock_llm.py")
PROVIDER_VARS = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OLLAMA_HOST",
                 "ECPD_MODEL")
TERMINAL_BYTES = 60_000_000
CHAT_CHUNKS = 10_000
CHAT_CHUNK_BYTES = 4000
WATCH_FILES = 50_000
FLOODS = ("terminal", "chat", "watch")

ANSWER_PREFIX = b'{"jsonrpc":"2.0","id":'
METHOD_PREFIX = b'{"jsonrpc":"2.0","method":"'


def req(id_, method, params=None):
    m = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        m["params"] = params
    return (json.dumps(m) + "\n").encode()


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, len(values) * q // 100)]


class Stdio:
    """ecpd on stdio, newline-delimited. Answers are kept by id with the time
    they arrived; notifications are counted by method, and the ones named in
    keep are kept whole, in order, with everything's arrival index. With
    keep_all, every message is parsed and kept too, in messages (arrival
    time, message) and sizes (its size on the wire): for tests that look at
    the order of everything, not for measuring."""

    def __init__(self, ecpd, tmp, env=None, keep=(), keep_all=False):
        self.p = subprocess.Popen([ecpd, "--stdio", "--data-dir", os.path.join(tmp, "data"), "--workspace", tmp],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        self.keep = tuple(keep)
        self.keep_all = keep_all
        self.cond = threading.Condition()
        self.answers = {}           # id -> (arrival time, arrival index, message)
        self.counts = {}            # method -> notifications received
        self.kept = []              # (arrival index, message) of the methods in keep
        self.messages = []          # keep_all: (arrival time, message) of everything, in order
        self.sizes = []             # keep_all: the size of each on the wire
        self.received = 0           # messages so far
        self.reading = threading.Event()
        self.reading.set()
        self.ended = False
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        pending = b""
        while True:
            self.reading.wait()
            chunk = self.p.stdout.read1(1 << 20)
            if not chunk:
                break
            now = time.monotonic()
            lines = (pending + chunk).split(b"\n")
            pending = lines.pop()
            with self.cond:
                for line in lines:
                    if not line:
                        continue
                    index = self.received
                    self.received += 1
                    if self.keep_all:
                        m = json.loads(line)
                        self.messages.append((now, m))
                        self.sizes.append(len(line) + 1)
                    elif line.startswith(METHOD_PREFIX):
                        method = line[len(METHOD_PREFIX):line.index(b'"', len(METHOD_PREFIX))].decode()
                        self.counts[method] = self.counts.get(method, 0) + 1
                        if method in self.keep:
                            self.kept.append((index, json.loads(line)))
                        continue
                    else:
                        m = json.loads(line)
                    if "method" in m:  # (written in another order than "jsonrpc", "method": counted all the same)
                        self.counts[m["method"]] = self.counts.get(m["method"], 0) + 1
                        if m["method"] in self.keep:
                            self.kept.append((index, m))
                    else:
                        self.answers[m.get("id")] = (now, index, m)
                self.cond.notify_all()
        with self.cond:
            self.ended = True
            self.cond.notify_all()

    def send(self, data):
        self.p.stdin.write(data)
        self.p.stdin.flush()

    def answer(self, id_, timeout=60):
        deadline = time.monotonic() + timeout
        with self.cond:
            while id_ not in self.answers:
                left = deadline - time.monotonic()
                if left <= 0 or self.ended:
                    raise AssertionError("no answer to %r; the server said: %s" % (id_, self.stderr_tail()))
                self.cond.wait(left)
            return self.answers[id_]

    def call(self, id_, method, params=None):
        self.send(req(id_, method, params))
        return self.answer(id_)[2]

    def wait_for(self, pred, timeout=60):
        """keep_all: the index in messages of the first message pred accepts."""
        assert self.keep_all, "wait_for looks at every message: start with keep_all"
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for i, (_, m) in enumerate(self.messages):
                    if pred(m):
                        return i
                left = deadline - time.monotonic()
                if left <= 0 or self.ended:
                    raise AssertionError("no such message; the server said: " + self.stderr_tail())
                self.cond.wait(left)

    def answer_of(self, id_, timeout=60):
        """keep_all: the index in messages of the answer to id_."""
        return self.answer(id_, timeout)[1]

    def count(self, method):
        with self.cond:
            return self.counts.get(method, 0)

    def wait_count(self, method, at_least, timeout=60):
        deadline = time.monotonic() + timeout
        with self.cond:
            while self.counts.get(method, 0) < at_least:
                left = deadline - time.monotonic()
                if left <= 0 or self.ended:
                    raise AssertionError("only %d %s; the server said: %s"
                                         % (self.counts.get(method, 0), method, self.stderr_tail()))
                self.cond.wait(left)

    def stderr_tail(self):
        if self.p.poll() is None:
            return "(still running)"
        return self.p.stderr.read().decode(errors="replace")[-2000:]

    def close_input(self):
        try:
            self.p.stdin.close()
        except BrokenPipeError:
            pass

    def close(self):
        self.reading.set()
        self.close_input()
        try:
            code = self.p.wait(30)
        except subprocess.TimeoutExpired:
            self.p.kill()
            code = self.p.wait()
        self.thread.join(10)
        errors = self.p.stderr.read().decode(errors="replace")
        self.p.stdout.close()
        self.p.stderr.close()
        return code, errors


class Floods:
    """A server on stdio with what each flood needs set up: a terminal
    script, the scripted model in its own process, a watched folder."""

    def __init__(self, ecpd, chat_delay=None, keep=(), env=None):
        self.tmp = tempfile.mkdtemp(prefix="ecpd-floods-")
        self.script = os.path.join(self.tmp, "flood.sh")
        with open(self.script, "w") as f:
            f.write("#!/bin/sh\nyes | head -c %d\n" % TERMINAL_BYTES)
        os.chmod(self.script, 0o755)
        self.watched = os.path.join(self.tmp, "checkout")
        os.mkdir(self.watched)
        texts = ["%06d:" % i + "m" * (CHAT_CHUNK_BYTES - 7) for i in range(CHAT_CHUNKS)]
        reply = {"text": texts}
        if chat_delay:
            reply["delay"] = chat_delay
        script_path = os.path.join(self.tmp, "llm.json")
        with open(script_path, "w") as f:
            json.dump([reply] * 4, f)
        self.mock = subprocess.Popen([sys.executable, MOCK_LLM, script_path], stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        port = int(self.mock.stdout.readline().split()[1])
        server_env = {k: v for k, v in os.environ.items() if k not in PROVIDER_VARS}
        server_env.update(env or {})
        server_env.update(OPENAI_API_KEY="sk-test", OPENAI_BASE_URL="http://127.0.0.1:%d/v1" % port)
        self.s = Stdio(ecpd, self.tmp, server_env, keep)
        self.next_id = 1000
        self.creator = None
        init = self.s.call(0, "initialize", {"capabilities": {}})
        if init.get("error"):
            raise AssertionError("initialize: %r" % init)
        watch = self.s.call(1, "file/watch", {"uri": "file://" + self.watched})
        if watch.get("error"):
            raise AssertionError("file/watch: %r" % watch)

    def new_id(self):
        self.next_id += 1
        return self.next_id

    def start(self, flood):
        if flood == "terminal":
            m = self.s.call(self.new_id(), "terminal/create", {"shell": self.script})
            assert "result" in m, m
        elif flood == "chat":
            m = self.s.call(self.new_id(), "chat/prompt", {"message": "stream"})
            assert "result" in m, m
        else:
            # another process makes the files, as a checkout would
            self.creator = subprocess.Popen([sys.executable, "-c",
                                             "import os, sys\n"
                                             "d = sys.argv[1]\n"
                                             "for i in range(%d):\n"
                                             "    with open(os.path.join(d, 'f%%05d.txt' %% i), 'w') as f:\n"
                                             "        f.write('x')\n" % WATCH_FILES, self.watched])

    def started(self, flood, timeout=60):
        method = {"terminal": "terminal/output", "chat": "chat/contentReceived", "watch": "file/didChange"}[flood]
        self.s.wait_count(method, 1, timeout)

    def flooding(self, floods):
        """Whether any of floods is still sending."""
        c = self.s.counts
        with self.s.cond:
            for flood in floods:
                if flood == "terminal" and not c.get("terminal/exit"):
                    return True
                if flood == "chat" and c.get("chat/contentReceived", 0) < CHAT_CHUNKS:
                    return True
                if flood == "watch" and (self.creator.poll() is None
                                         or c.get("file/didCreate", 0) < WATCH_FILES // 2):
                    return True
        return False

    def ping_waits(self, floods, max_pings=400, interval=0.01, timeout=30):
        """The waits of pings sent every interval while floods go on."""
        waits = []
        while len(waits) < max_pings and self.flooding(floods):
            id_ = self.new_id()
            sent = time.monotonic()
            self.s.send(req(id_, "ecp/ping", [id_]))
            arrived, _, m = self.s.answer(id_, timeout)
            assert m.get("result") == [id_], m
            waits.append(arrived - sent)
            time.sleep(interval)
        return waits

    def close(self):
        code, errors = self.s.close()
        if self.creator:
            self.creator.wait()
        self.mock.kill()
        self.mock.wait()
        self.mock.stdout.close()
        shutil.rmtree(self.tmp, ignore_errors=True)
        return code, errors


def measure(ecpd, floods, max_pings=400):
    """Starts floods together, pings meanwhile; returns (waits, counts, code, errors)."""
    f = Floods(ecpd)
    try:
        for flood in floods:
            f.start(flood)
        for flood in floods:
            f.started(flood)
        waits = f.ping_waits(floods, max_pings)
        with f.s.cond:
            counts = dict(f.s.counts)
    finally:
        code, errors = f.close()
    return waits, counts, code, errors
