#!/usr/bin/env python3
"""Parser depth tests: the real ecpd binary fed nesting an attacker chooses.

usage: test_parsers.py ECPD

Glob patterns (settings, settings files, the store, file methods) and key
binding `when` clauses nested far past what a person writes must be refused
with an error that names the limit, never overflow the server's stack; a
value persisted before the limits existed must not stop the server from
starting, whichever layer holds it.
"""
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import unittest

ECPD = None

NESTED_BRACES = "{" * 999 + "a" + "}" * 999


class Server:
    """One ecpd on stdio; requests are newline-delimited JSON."""

    def __init__(self, tmp, *args, workspace=None, log=None, cwd=None):
        cmd = [ECPD, "--stdio", "--data-dir", os.path.join(tmp, "data")]
        if workspace:
            cmd += ["--workspace", workspace]
        if log:
            cmd += ["--log", log, "--log-level", "debug"]
        self.p = subprocess.Popen(cmd + list(args), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, cwd=cwd)
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

    def response(self, method, params=None, timeout=30):
        id_ = self.next_id
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": id_, "method": method}
        if params is not None:
            msg["params"] = params
        self.p.stdin.write((json.dumps(msg) + "\n").encode())
        self.p.stdin.flush()
        while True:
            m = self._line(timeout)
            if m.get("id") == id_:
                return m

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
        code = self.p.wait(10)
        self.p.stdout.close()
        self.p.stderr.close()
        return code

    def kill(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGKILL)
        self.p.wait(10)


class ParserTests(unittest.TestCase):
    def setUp(self):
        self.tmpdir = tempfile.TemporaryDirectory(prefix="ecpd-parsers-")
        self.tmp = self.tmpdir.name
        self.ws = os.path.join(self.tmp, "ws")
        os.mkdir(self.ws)
        with open(os.path.join(self.ws, "a.txt"), "w") as f:
            f.write("needle\n")
        self.log = os.path.join(self.tmp, "ecpd.log")
        self.servers = []

    def tearDown(self):
        for s in self.servers:
            s.kill()
        # rm, not shutil: a tree left as deep as paths go takes Python past its recursion limit
        subprocess.run(["rm", "-rf", self.tmp], check=False)
        self.tmpdir.cleanup()

    def server(self, *args, **kw):
        kw.setdefault("workspace", self.ws)
        kw.setdefault("log", self.log)
        s = Server(self.tmp, *args, **kw)
        self.servers.append(s)
        return s

    def logged(self):
        with open(self.log, errors="replace") as f:
            return f.read()

    def serves(self, s):
        self.assertEqual(s.call("config/get", {"key": "editor.tabSize"}), {"value": 2})
        self.assertIn("a.txt", json.dumps(s.call("file/glob", {"pattern": "*.txt", "baseUri": "file://" + self.ws})))

    def test_config_set_refuses_braces_nested_too_deep(self):
        s = self.server()
        err = s.error("config/set", {"key": "files.exclude", "value": {NESTED_BRACES: True}})
        self.assertEqual(err["code"], -32301)
        self.assertIn("files.exclude", err["message"])
        self.assertIn("nests braces deeper than 32", err["message"])
        self.assertEqual(err["data"]["key"], "files.exclude")
        self.serves(s)
        # exactly at the limit is a pattern like any other
        at_limit = "{" * 32 + "a" + "}" * 32
        s.call("config/set", {"key": "files.exclude", "value": {at_limit: True}})
        self.assertEqual(s.close(), 0)
        s = self.server()
        self.assertEqual(s.call("config/get", {"key": "files.exclude"}), {"value": {at_limit: True}})
        self.serves(s)
        self.assertEqual(s.close(), 0)

    def test_a_pattern_persisted_in_the_store_is_skipped_at_start(self):
        s = self.server()
        s.call("config/set", {"key": "editor.tabSize", "value": 4})
        self.assertEqual(s.close(), 0)
        db = sqlite3.connect(os.path.join(self.tmp, "data", "state.db"))
        db.execute("INSERT OR REPLACE INTO settings (key, value) VALUES (?, ?)",
                   ("files.exclude", json.dumps({NESTED_BRACES: True})))
        db.commit()
        db.close()
        s = self.server()
        self.assertEqual(s.call("config/get", {"key": "editor.tabSize"}), {"value": 4})
        self.assertEqual(s.call("config/get", {"key": "files.exclude"})["value"],
                         {"**/node_modules": True, "**/.git": True, "**/.DS_Store": True})
        self.assertEqual(s.close(), 0)
        self.assertIn("files.exclude", self.logged())
        self.assertIn("nests braces deeper than 32", self.logged())

    def test_a_pattern_in_a_settings_file_is_skipped_at_start(self):
        user = os.path.join(self.tmp, "settings.jsonc")
        with open(user, "w") as f:
            json.dump({"files.exclude": {NESTED_BRACES: True}, "editor.tabSize": 3}, f)
        s = self.server("--config", user)
        self.assertEqual(s.call("config/get", {"key": "editor.tabSize"}), {"value": 3})
        self.assertEqual(s.close(), 0)
        self.assertIn("%s: invalid value for setting 'files.exclude'" % user, self.logged())

        os.makedirs(os.path.join(self.ws, ".ecpd"))
        with open(os.path.join(self.ws, ".ecpd", "settings.json"), "w") as f:
            json.dump({"files.exclude": {NESTED_BRACES: True}}, f)
        s = self.server()
        self.serves(s)
        self.assertEqual(s.close(), 0)
        self.assertIn("settings.json: invalid value for setting 'files.exclude'", self.logged())

    def test_a_settings_file_nested_past_the_json_limit_is_reported(self):
        user = os.path.join(self.tmp, "settings.jsonc")
        with open(user, "w") as f:
            f.write('{"editor.tabSize": 3, "files.exclude": ' + "[" * 100000 + "]" * 100000 + "}")
        s = self.server("--config", user)
        self.serves(s)  # the file is refused whole: tabSize keeps its default
        self.assertEqual(s.close(), 0)
        self.assertIn("nesting deeper than 512 levels", self.logged())

    def test_file_methods_refuse_deep_patterns(self):
        s = self.server()
        base = "file://" + self.ws
        cases = [
            ("file/glob", {"pattern": NESTED_BRACES, "baseUri": base}),
            ("file/glob", {"pattern": "*.txt", "baseUri": base, "excludePatterns": [NESTED_BRACES]}),
            ("file/grep", {"pattern": "needle", "baseUri": base, "include": NESTED_BRACES}),
            ("file/grep", {"pattern": "needle", "baseUri": base, "exclude": [NESTED_BRACES]}),
            ("file/search", {"pattern": "a", "includePatterns": [self.ws], "excludePatterns": [NESTED_BRACES]}),
        ]
        for method, params in cases:
            err = s.error(method, params)
            self.assertEqual(err["code"], -32602, method)
            self.assertIn("nests braces deeper than 32", err["message"], method)
        self.serves(s)
        self.assertEqual(s.close(), 0)

    def test_file_glob_refuses_long_brace_chains_and_deep_paths(self):
        s = self.server()
        base = "file://" + self.ws
        # many groups one after another: each used to cost a stack frame
        err = s.error("file/glob", {"pattern": "{a}" * 100000, "baseUri": base})
        self.assertEqual(err["code"], -32602)
        self.assertIn("brace groups", err["message"])
        # many segments: matching used to recurse once per segment
        err = s.error("file/glob", {"pattern": "a/" * 200000 + "*", "baseUri": base})
        self.assertEqual(err["code"], -32602)
        self.assertIn("segments", err["message"])
        self.serves(s)
        self.assertEqual(s.close(), 0)

    def test_a_trailing_globstar_reaches_every_depth(self):
        os.makedirs(os.path.join(self.ws, "src", "a", "b"))
        with open(os.path.join(self.ws, "src", "a", "b", "deep.txt"), "w") as f:
            f.write("x\n")
        s = self.server()
        base = "file://" + self.ws
        deep = base + "/src/a/b/deep.txt"
        self.assertEqual(s.call("file/glob", {"pattern": "src/**", "baseUri": base})["uris"], [deep])
        self.assertIn(deep, s.call("file/glob", {"pattern": "**", "baseUri": base})["uris"])
        self.assertEqual(s.close(), 0)

    def test_a_tree_as_deep_as_paths_go_is_copied_and_deleted(self):
        # one-letter directories down to PATH_MAX: each level of the copy is a stack frame
        src = os.path.join(self.ws, "deep")
        os.mkdir(src)
        here = os.getcwd()
        depth = 0
        try:
            os.chdir(src)
            while len(os.getcwd()) + 2 < 4090:
                os.mkdir("a")
                os.chdir("a")
                depth += 1
            with open("f", "w") as f:
                f.write("x\n")
        finally:
            os.chdir(here)
        self.assertGreater(depth, 1900)
        s = self.server()
        target = os.path.join(self.tmp, "copy")
        m = s.response("file/copy", {"sourceUri": "file://" + src, "targetUri": "file://" + target})
        self.assertTrue("result" in m or "error" in m)
        self.serves(s)
        # and deleted again, as deep, by the server
        for path in (src, target):
            if os.path.exists(path):
                s.call("file/deleteDir", {"uri": "file://" + path, "recursive": True})
            self.assertFalse(os.path.exists(path))
        self.assertEqual(s.close(), 0)

    def test_an_acp_client_that_leaves_during_a_prompt(self):
        # the agent answers the prompt (no key in the secret store) after stdin closed and the front end went
        env = {k: v for k, v in os.environ.items()
               if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "OLLAMA_HOST", "ECPD_MODEL")}
        for attempt in range(15):
            p = subprocess.Popen([ECPD, "--acp", "--data-dir", os.path.join(self.tmp, "data")], cwd=self.ws,
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
            def send(m):
                p.stdin.write((json.dumps(m) + "\n").encode())
                p.stdin.flush()
            send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
            p.stdout.readline()
            sessions = []
            for i in range(4):
                send({"jsonrpc": "2.0", "id": 2 + i, "method": "session/new",
                      "params": {"cwd": self.ws, "mcpServers": []}})
                while True:
                    m = json.loads(p.stdout.readline())
                    if m.get("id") == 2 + i:
                        sessions.append(m["result"]["sessionId"])
                        break
            prompts = b"".join((json.dumps({"jsonrpc": "2.0", "id": 10 + i, "method": "session/prompt",
                                            "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]}})
                                + "\n").encode() for i, sid in enumerate(sessions))
            p.stdin.write(prompts)
            p.stdin.close()
            p.stdout.read()
            err = p.stderr.read().decode(errors="replace")
            self.assertEqual(p.wait(30), 0, err[-3000:])
            self.assertNotIn("Sanitizer", err)
            p.stdout.close()
            p.stderr.close()

    def test_when_clauses_nested_too_deep_are_refused(self):
        s = self.server()
        for when in ["(" * 50000 + "a" + ")" * 50000, "!" * 100000 + "a", "(" * 50000]:
            err = s.error("keybindings/set", {"bindings": [{"key": "ctrl+k", "command": "x", "when": when}]})
            self.assertEqual(err["code"], -32304)
            self.assertIn("nests deeper than 64", err["message"])
            err = s.error("keybindings/add", {"binding": {"key": "ctrl+k", "command": "x", "when": when}})
            self.assertEqual(err["code"], -32304)
        at_limit = "(" * 32 + "!" * 32 + "a" + ")" * 32
        s.call("keybindings/add", {"binding": {"key": "ctrl+k", "command": "x", "when": at_limit}})
        press = {"key": "k", "ctrl": True}
        self.assertEqual(s.call("keybindings/resolve", {"key": press, "context": {"a": True}})["command"], "x")
        self.assertIsNone(s.call("keybindings/resolve", {"key": press, "context": {"a": False}}).get("command"))
        err = s.error("keybindings/add", {"binding": {"key": "ctrl+k", "command": "x", "when": "!" + at_limit}})
        self.assertIn("nests deeper than 64", err["message"])
        self.serves(s)
        self.assertEqual(s.close(), 0)

    def test_a_when_clause_persisted_in_the_store_is_skipped_at_start(self):
        s = self.server()
        s.call("keybindings/add", {"binding": {"key": "ctrl+q", "command": "quit"}})
        self.assertEqual(s.close(), 0)
        db = sqlite3.connect(os.path.join(self.tmp, "data", "state.db"))
        db.execute("INSERT INTO keybindings (position, key, command, when_clause, args) VALUES (?, ?, ?, ?, NULL)",
                   (5, "ctrl+w", "close", "(" * 50000 + "a" + ")" * 50000))
        db.commit()
        db.close()
        s = self.server()
        self.assertEqual(s.call("keybindings/get"), {"bindings": [{"key": "ctrl+q", "command": "quit"}]})
        self.serves(s)
        self.assertEqual(s.close(), 0)
        self.assertIn("nests deeper than 64", self.logged())


if __name__ == "__main__":
    ECPD = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
