#!/usr/bin/env python3
"""Session transport tests: the real ecpd binary and its data directory.

usage: test_session.py ECPD

What must survive a restart does; what was typed more than a second before a
kill -9 comes back; two servers share one data directory; settings files
edited while the server runs apply at once; a secret's value never reaches
the log; a database that cannot be used leaves the server running.
"""
import json
import os
import resource
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import unittest

ECPD = None


class Server:
    """One ecpd on stdio; requests are newline-delimited JSON."""

    def __init__(self, tmp, *args, workspace=None, log=None, preexec=None, cwd=None):
        cmd = [ECPD, "--stdio", "--data-dir", os.path.join(tmp, "data")]
        if workspace:
            cmd += ["--workspace", workspace]
        if log:
            cmd += ["--log", log, "--log-level", "debug"]
        self.p = subprocess.Popen(cmd + list(args), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, preexec_fn=preexec, cwd=cwd)
        self.buf = bytearray()
        self.next_id = 1
        self.notes = []

    def _line(self, timeout):
        deadline = time.time() + timeout
        scanned = 0  # a 64 MB notification must not be rescanned per chunk
        while True:
            end = self.buf.find(b"\n", scanned)
            if end >= 0:
                break
            scanned = len(self.buf)
            if time.time() > deadline:
                raise TimeoutError("no message from ecpd")
            chunk = self.p.stdout.read1(1 << 20)
            if not chunk:
                raise EOFError("ecpd closed stdout: " + self.p.stderr.read().decode(errors="replace"))
            self.buf += chunk
        line = bytes(self.buf[:end])
        del self.buf[:end + 1]
        return json.loads(line)

    def send(self, method, params=None):
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.next_id += 1
        self.p.stdin.write((json.dumps(msg) + "\n").encode())
        self.p.stdin.flush()
        return msg["id"]

    def response(self, id_, timeout=20):
        while True:
            m = self._line(timeout)
            if "id" in m and m["id"] == id_:
                return m
            if "method" in m:
                self.notes.append(m)

    def call(self, method, params=None):
        m = self.response(self.send(method, params))
        if "error" in m:
            raise AssertionError("%s failed: %s" % (method, m["error"]))
        return m["result"]

    def error(self, method, params=None):
        m = self.response(self.send(method, params))
        assert "error" in m, "%s should have failed: %s" % (method, m)
        return m["error"]

    def wait_note(self, method, timeout=5):
        deadline = time.time() + timeout
        while True:
            for i, n in enumerate(self.notes):
                if n["method"] == method:
                    return self.notes.pop(i)
            if time.time() > deadline:
                raise TimeoutError("no %s; got %s" % (method, [n["method"] for n in self.notes]))
            self.call("ecp/ping", {})
            time.sleep(0.05)

    def close(self):
        self.p.stdin.close()
        code = self.p.wait(10)
        self.p.stdout.close()
        self.p.stderr.close()
        return code

    def kill(self):
        self.p.send_signal(signal.SIGKILL)
        self.p.wait(10)
        self.p.stdout.close()
        self.p.stderr.close()
        self.p.stdin.close()


def journaled_bytes(tmp):
    """The size of the largest document in the journal of the server's store."""
    try:
        db = sqlite3.connect("file:%s?mode=ro" % os.path.join(tmp, "data", "state.db"), uri=True, timeout=5)
        try:
            row = db.execute("SELECT max(length(content)) FROM journal").fetchone()
        finally:
            db.close()
    except sqlite3.Error:
        return None
    return row[0] if row else None


class SessionTests(unittest.TestCase):
    def setUp(self):
        self.tmpdir = tempfile.TemporaryDirectory(prefix="ecpd-session-")
        self.tmp = self.tmpdir.name
        self.ws = os.path.join(self.tmp, "ws")
        os.mkdir(self.ws)

    def tearDown(self):
        self.tmpdir.cleanup()

    def server(self, *args, **kw):
        kw.setdefault("workspace", self.ws)
        return Server(self.tmp, *args, **kw)

    def test_state_survives_a_restart(self):
        s = self.server()
        self.assertTrue(s.call("initialize", {})["capabilities"]["persistence"])
        s.call("config/set", {"key": "editor.fontSize", "value": 21})
        s.call("keybindings/add", {"binding": {"key": "ctrl+q", "command": "quit", "when": "!dirty"}})
        s.call("theme/set", {"themeId": "github-light"})
        s.call("secret/set", {"key": "db.password", "value": "pa55"})
        path = os.path.join(self.ws, "a.txt")
        with open(path, "w") as f:
            f.write("text\n")
        doc = s.call("document/open", {"uri": "file://" + path})["documentId"]
        s.call("document/insert", {"documentId": doc, "position": {"line": 0, "column": 0}, "text": "more "})
        sid = s.call("session/save", {"name": "keep", "state": {"panes": 2}})["sessionId"]
        self.assertEqual(s.close(), 0)

        s = self.server()
        self.assertEqual(s.call("config/get", {"key": "editor.fontSize"}), {"value": 21})
        self.assertEqual(s.call("keybindings/get"),
                         {"bindings": [{"key": "ctrl+q", "command": "quit", "when": "!dirty"}]})
        self.assertEqual(s.call("theme/current")["theme"]["id"], "github-light")
        self.assertEqual(s.call("secret/get", {"key": "db.password"}), {"value": "pa55"})
        state = s.call("session/load", {"sessionId": sid})
        self.assertEqual(state["state"], {"panes": 2})
        self.assertEqual(state["documents"][0]["unsavedContent"], "more text\n")
        restored = s.call("session/restore", {"sessionId": sid})
        self.assertEqual(len(restored["documents"]), 1)
        self.assertTrue(restored["documents"][0]["isDirty"])
        self.assertEqual(s.close(), 0)
        mode = os.stat(os.path.join(self.tmp, "data", "state.db")).st_mode & 0o777
        self.assertEqual(mode, 0o600)

    def test_a_restored_document_that_changed_on_disk_says_so(self):
        s = self.server()
        s.call("initialize", {})
        path = os.path.join(self.ws, "a.txt")
        with open(path, "w") as f:
            f.write("text\n")
        doc = s.call("document/open", {"uri": "file://" + path})["documentId"]
        s.call("document/insert", {"documentId": doc, "position": {"line": 0, "column": 0}, "text": "more "})
        sid = s.call("session/save", {"name": "keep"})["sessionId"]
        with open(path, "w") as f:
            f.write("changed under the editor\n")
        s.wait_note("document/didChangeOnDisk")
        self.assertTrue(s.call("document/info", {"documentId": doc})["changedOnDisk"])
        # the session's document is the one open: restore says what document/info says of it
        restored = s.call("session/restore", {"sessionId": sid})["documents"]
        self.assertEqual([(d["documentId"], d.get("changedOnDisk")) for d in restored], [(doc, True)])
        self.assertEqual(s.close(), 0)

    def test_kill_9_while_typing_loses_nothing_older_than_a_second(self):
        path = os.path.join(self.ws, "notes.md")
        with open(path, "w") as f:
            f.write("# notes\n")
        s = self.server()
        doc = s.call("document/open", {"uri": "file://" + path})["documentId"]
        typed = []  # (time acknowledged, text after it)
        text = "# notes\n"
        start = time.time()
        line = 0
        while time.time() - start < 2.5:
            piece = "line %d\n" % line
            s.call("document/insert", {"documentId": doc, "position": {"line": line + 1, "column": 0},
                                       "text": piece})
            text += piece
            typed.append((time.time(), text))
            line += 1
            time.sleep(0.01)
        killed_at = time.time()
        s.kill()

        s = self.server()
        listed = s.call("session/recoverable")["documents"]
        self.assertEqual(len(listed), 1)
        self.assertEqual(listed[0]["uri"], "file://" + path)
        self.assertEqual(listed[0]["languageId"], "markdown")
        recovered = s.call("session/recover", {"uris": ["file://" + path]})["documents"]
        self.assertEqual(len(recovered), 1)
        self.assertTrue(recovered[0]["isDirty"])
        content = s.call("document/content", {"documentId": recovered[0]["documentId"]})["content"]
        # everything acknowledged more than a second before the kill is there
        older = [t for (when, t) in typed if when < killed_at - 1.0]
        self.assertTrue(older, "typing lasted long enough")
        self.assertTrue(content.startswith(older[-1]), "lost %d bytes" % (len(older[-1]) - len(content)))
        self.assertTrue(text.startswith(content))
        # the file itself was never touched
        with open(path) as f:
            self.assertEqual(f.read(), "# notes\n")
        self.assertEqual(s.call("session/recoverable"), {"documents": []})
        s.close()

    def test_a_server_killed_right_after_a_recovery_leaves_the_text(self):
        path = os.path.join(self.ws, "draft.txt")
        with open(path, "w") as f:
            f.write("draft\n")
        s = self.server()
        doc = s.call("document/open", {"uri": "file://" + path})["documentId"]
        s.call("document/insert", {"documentId": doc, "position": {"line": 1, "column": 0}, "text": "typed once\n"})
        deadline = time.time() + 30
        while time.time() < deadline and journaled_bytes(self.tmp) != len("draft\ntyped once\n"):
            time.sleep(0.05)
        s.kill()
        # recovered, then killed before the reopened document could be journaled
        s = self.server()
        self.assertEqual(len(s.call("session/recover")["documents"]), 1)
        s.kill()
        s = self.server()
        listed = s.call("session/recoverable")["documents"]
        self.assertEqual([d["uri"] for d in listed], ["file://" + path])
        doc = s.call("session/recover")["documents"][0]["documentId"]
        self.assertEqual(s.call("document/content", {"documentId": doc})["content"], "draft\ntyped once\n")
        self.assertEqual(s.close(), 0)

    def test_a_server_without_unsaved_text_leaves_no_trace_of_itself(self):
        """Its instance (lock file and row) is made with the first text it journals, not at start."""
        def lock_files():
            try:
                return [n for n in os.listdir(os.path.join(self.tmp, "data", "instances")) if n.endswith(".lock")]
            except FileNotFoundError:
                return []

        def instance_rows():
            db = sqlite3.connect("file:%s?mode=ro" % os.path.join(self.tmp, "data", "state.db"), uri=True,
                                 timeout=5)
            try:
                return db.execute("SELECT count(*) FROM instances").fetchone()[0]
            finally:
                db.close()

        path = os.path.join(self.ws, "a.txt")
        with open(path, "w") as f:
            f.write("text\n")
        s = self.server()
        s.call("initialize", {})
        doc = s.call("document/open", {"uri": "file://" + path})["documentId"]
        self.assertEqual(s.call("ecp/ping", {"n": 1}), {"n": 1})
        self.assertEqual(lock_files(), [])
        self.assertEqual(instance_rows(), 0)
        s.call("document/insert", {"documentId": doc, "position": {"line": 0, "column": 0}, "text": "more "})
        deadline = time.time() + 30
        while time.time() < deadline and journaled_bytes(self.tmp) != len("more text\n"):
            time.sleep(0.05)
        self.assertEqual(len(lock_files()), 1)
        self.assertEqual(instance_rows(), 1)
        s.kill()
        # the next server, which keeps nothing of its own, still offers the text
        s = self.server()
        self.assertEqual([d["uri"] for d in s.call("session/recoverable")["documents"]], ["file://" + path])
        self.assertEqual(len(lock_files()), 1)  # the killed server's, kept with its rows; none of its own
        self.assertEqual(s.close(), 0)

    def test_a_large_dirty_document_is_journaled_without_stalling(self):
        path = os.path.join(self.ws, "big.log")
        line = ("0123456789abcdef" * 4)[:63] + "\n"
        count = (64 << 20) // len(line)
        with open(path, "w") as f:
            f.write(line * count)
        s = self.server()
        s.call("notifications/unsubscribe", {"events": ["document/didChange"]})
        doc = s.call("document/open", {"uri": "file://" + path})["documentId"]
        worst = 0.0
        start = time.time()
        n = 0
        while time.time() - start < 3.0:
            t = time.time()
            s.call("document/insert", {"documentId": doc, "position": {"line": 0, "column": 0}, "text": "x"})
            n += 1
            worst = max(worst, time.time() - t)
            time.sleep(0.02)
        self.assertLess(worst, 0.25, "an edit waited %.3f s while the journal wrote 64 MB" % worst)
        # Writing 64 MB takes a loaded machine longer than the second the small
        # document's test holds the journal to: wait until the store has the
        # last edit (read beside the server, as WAL allows), then kill.
        expected = count * len(line) + n
        deadline = time.time() + 30
        while time.time() < deadline and journaled_bytes(self.tmp) != expected:
            time.sleep(0.1)
        s.kill()

        s = self.server()
        s.call("notifications/unsubscribe", {"events": ["document/didChange"]})
        listed = s.call("session/recoverable")["documents"]
        self.assertEqual(len(listed), 1)
        self.assertEqual(listed[0]["bytes"], count * len(line) + n)
        doc = s.call("session/recover")["documents"][0]
        self.assertEqual(doc["lineCount"], count + 1)
        first = s.call("document/line", {"documentId": doc["documentId"], "lineNumber": 0})
        self.assertEqual(first["text"], "x" * n + line[:-1])
        s.close()

    def test_two_servers_share_one_data_directory(self):
        other = os.path.join(self.tmp, "other")
        os.mkdir(other)
        # started together on a fresh data directory: both keep the file
        a, b = self.server(), self.server(workspace=other)
        self.assertTrue(a.call("initialize", {})["capabilities"]["persistence"])
        self.assertTrue(b.call("initialize", {})["capabilities"]["persistence"])
        for i in range(40):
            (a if i % 2 else b).call("config/set", {"key": "editor.tabSize", "value": 1 + i % 16})
            (b if i % 2 else a).call("secret/set", {"key": "k%d" % i, "value": "v%d" % i})
        a.call("session/save", {"name": "from-a"})
        b.call("session/save", {"name": "from-b"})
        # each sees what the other saved in the shared store
        ids = sorted(x["id"] for x in a.call("session/list")["sessions"])
        self.assertEqual(ids, ["named-from-a", "named-from-b"])
        self.assertEqual(b.call("secret/get", {"key": "k38"}), {"value": "v38"})
        self.assertEqual(a.close(), 0)
        self.assertEqual(b.close(), 0)
        db = sqlite3.connect(os.path.join(self.tmp, "data", "state.db"))
        self.assertEqual(db.execute("PRAGMA integrity_check").fetchone()[0], "ok")
        self.assertEqual(db.execute("SELECT count(*) FROM secrets").fetchone()[0], 40)
        db.close()
        c = self.server()
        self.assertEqual(c.call("secret/list")["keys"], sorted("k%d" % i for i in range(40)))
        c.close()

    def test_settings_files_edited_while_running(self):
        user = os.path.join(self.tmp, "settings.jsonc")
        with open(user, "w") as f:
            f.write('{\n  // comments and trailing commas are fine\n  "editor.tabSize": 4,\n}\n')
        # named relative to the server's working directory, and still watched
        s = self.server("--config", "settings.jsonc", cwd=self.tmp)
        self.assertEqual(s.call("config/get", {"key": "editor.tabSize"}), {"value": 4})
        with open(user + ".new", "w") as f:
            f.write('{"editor.tabSize": 8, /* eight */}')
        os.rename(user + ".new", user)
        note = s.wait_note("config/didChange")
        self.assertEqual(note["params"], {"key": "editor.tabSize", "value": 8})
        with open(user, "w") as f:
            f.write('{"editor.tabSize": ')
        msg = s.wait_note("$/showMessage")
        self.assertEqual(msg["params"]["type"], 1)
        self.assertEqual(s.call("config/get", {"key": "editor.tabSize"}), {"value": 8})
        os.makedirs(os.path.join(self.ws, ".ecpd"))
        time.sleep(0.2)
        with open(os.path.join(self.ws, ".ecpd", "settings.json"), "w") as f:
            f.write('{"workbench.colorTheme": "catppuccin-latte"}')
        theme = s.wait_note("theme/didChange")
        self.assertEqual(theme["params"], {"themeId": "catppuccin-latte"})
        self.assertEqual(s.close(), 0)

    def test_secret_values_never_reach_the_log(self):
        log = os.path.join(self.tmp, "ecpd.log")
        value = "hunter2-is-not-a-good-password"
        s = self.server(log=log)
        s.call("secret/set", {"key": "mail", "value": value})
        s.call("secret/get", {"key": "mail"})
        s.error("secret/set", {"key": "x", "value": value, "options": {"provider": "env"}})
        s.error("secret/set", {"key": "", "value": value})
        s.close()
        # a key file that no longer opens the values: still no value in any message
        with open(os.path.join(self.tmp, "data", "secret.key"), "r+b") as f:
            f.write(os.urandom(32))
        s = self.server(log=log)
        err = s.error("secret/get", {"key": "mail"})
        self.assertEqual(err["code"], -32603)
        self.assertNotIn(value, json.dumps(err))
        s.close()
        with open(log, "rb") as f:
            text = f.read()
        self.assertIn(b"cannot be decrypted", text)
        self.assertNotIn(value.encode(), text)
        for name in os.listdir(os.path.join(self.tmp, "data")):
            p = os.path.join(self.tmp, "data", name)
            if os.path.isfile(p):
                with open(p, "rb") as f:
                    self.assertNotIn(value.encode(), f.read(), name)

    def test_a_corrupt_database_leaves_the_server_running_in_memory(self):
        data = os.path.join(self.tmp, "data")
        os.makedirs(data)
        junk = b"definitely not SQLite " * 500
        with open(os.path.join(data, "state.db"), "wb") as f:
            f.write(junk)
        log = os.path.join(self.tmp, "ecpd.log")
        s = self.server(log=log)
        self.assertFalse(s.call("initialize", {})["capabilities"]["persistence"])
        s.call("config/set", {"key": "editor.fontSize", "value": 9})
        self.assertEqual(s.call("config/get", {"key": "editor.fontSize"}), {"value": 9})
        self.assertEqual(s.close(), 0)
        with open(os.path.join(data, "state.db"), "rb") as f:
            self.assertEqual(f.read(), junk)
        with open(log) as f:
            self.assertIn("kept in memory", f.read())

    def test_a_full_disk_fails_the_save_and_keeps_what_was_saved(self):
        def limit():
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))
        s = self.server(preexec=limit)
        s.call("session/save", {"name": "small"})
        s.call("document/open", {"uri": "untitled:big", "content": ""})
        doc = s.call("document/list")["documents"][0]["documentId"]
        s.call("document/setContent", {"documentId": doc, "content": "x" * (3 << 20)})
        err = s.error("session/save", {"name": "big"})
        self.assertEqual(err["code"], -32603)
        self.assertIn("session", err["message"])
        # still serving, and what was saved before is intact
        self.assertEqual(s.call("session/load", {"sessionId": "named-small"})["sessionName"], "small")
        s.call("document/close", {"documentId": doc})
        s.call("session/save", {"name": "after"})
        self.assertEqual(s.close(), 0)


if __name__ == "__main__":
    ECPD = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
