#!/usr/bin/env python3
"""SQLite as an attacker uses it, through the real ecpd binary.

usage: test_sqlite_hardening.py ECPD

A client's SQL cannot reach SQLite's dangerous corners (fts3_tokenizer's
function pointers, extension loading); a readOnly connection writes nothing,
in its database or any other file; a relative database path stays in the
workspace; a damaged state.db or state.db-wal is noticed, kept aside and
served from memory; recovering the unsaved text of one killed server leaves
another killed server's text in the journal.
"""
import glob
import os
import sqlite3
import struct
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_session  # noqa: E402
from test_session import Server, journaled_bytes  # noqa: E402

TOKENIZER_ADDRESS = "SELECT fts3_tokenizer('simple', x'4141414141414141')"
TOKENIZER_USE = "CREATE VIRTUAL TABLE temp.pwn USING fts3(body, tokenize=simple)"


class Base(unittest.TestCase):
    def setUp(self):
        self.tmpdir = test_session.tempfile.TemporaryDirectory(prefix="ecpd-sqlite-")
        self.tmp = self.tmpdir.name
        self.ws = os.path.join(self.tmp, "ws")
        os.mkdir(self.ws)
        self.servers = []

    def tearDown(self):
        for s in self.servers:
            if s.p.poll() is None:
                s.kill()
        self.tmpdir.cleanup()

    def server(self, *args, **kw):
        kw.setdefault("workspace", self.ws)
        s = Server(self.tmp, *args, **kw)
        self.servers.append(s)
        return s

    def assert_alive(self, s):
        self.assertEqual(s.call("ecp/ping", {}), {})
        self.assertIsNone(s.p.poll(), "the server died")


class DatabaseTests(Base):
    def connect(self, s, path, read_only):
        cid = s.call("database/createConnection", {"config": {
            "name": path, "type": "sqlite", "path": path, "readOnly": read_only}})["connectionId"]
        s.call("database/connect", {"connectionId": cid})
        return cid

    def make_db(self, name):
        path = os.path.join(self.ws, name)
        db = sqlite3.connect(path)
        db.execute("CREATE TABLE t (x)")
        db.execute("INSERT INTO t VALUES (1)")
        db.commit()
        db.close()
        return path

    def test_fts3_tokenizer_cannot_plant_a_function_pointer(self):
        self.make_db("ro.db")
        s = self.server()
        for name, read_only in (("rw.db", False), ("ro.db", True)):
            cid = self.connect(s, name, read_only)
            # both statements go before any answer is judged: where the first is
            # allowed, the second makes the server call 0x4141414141414141
            planted = s.response(s.send("database/query", {"connectionId": cid, "sql": TOKENIZER_ADDRESS}))
            used = s.response(s.send("database/query", {"connectionId": cid, "sql": TOKENIZER_USE}))
            self.assert_alive(s)
            self.assertIn("error", planted, planted)
            self.assertEqual(planted["error"]["code"], -32603, planted)
            self.assertIn("fts3", planted["error"]["message"].lower())
            # nor does the one-argument form hand out the address of the built-in tokenizer
            err = s.error("database/query", {"connectionId": cid, "sql": "SELECT fts3_tokenizer('simple')"})
            self.assertEqual(err["code"], -32603, err)
            self.assertIn("fts3_tokenizer refused", err["message"])
            if read_only:
                self.assertEqual(used["error"]["code"], -32603, used)
                self.assertIn("readOnly connection: CREATE VIRTUAL TABLE refused", used["error"]["message"])
            else:
                # the tokenizer is still the built-in one: the table works
                self.assertIn("result", used, used)
                s.call("database/query", {"connectionId": cid, "sql": "INSERT INTO pwn VALUES ('some words')"})
                rows = s.call("database/query", {"connectionId": cid,
                                                 "sql": "SELECT body FROM pwn WHERE pwn MATCH 'words'"})["rows"]
                self.assertEqual(rows, [{"body": "some words"}])
        self.assertEqual(s.close(), 0)

    def test_a_read_only_connection_refuses_every_write(self):
        self.make_db("ro.db")
        outside = os.path.join(self.tmp, "outside")
        os.mkdir(outside)
        target = os.path.join(outside, "copy.db")
        s = self.server()
        cid = self.connect(s, "ro.db", True)
        refused = {
            "VACUUM INTO '%s'" % target: "VACUUM",
            "ATTACH DATABASE '%s' AS other" % os.path.join(outside, "attached.db"): "ATTACH",
            "INSERT INTO t VALUES (2)": "INSERT",
            "PRAGMA journal_mode = DELETE": "journal_mode",
            "PRAGMA user_version = 7": "user_version",
            "CREATE TEMP TABLE scratch (x)": "CREATE",
            "DELETE FROM t": "DELETE",
        }
        for sql, named in refused.items():
            err = s.error("database/query", {"connectionId": cid, "sql": sql})
            self.assertEqual(err["code"], -32603, (sql, err))
            self.assertEqual(err["data"]["engineCode"], "SQLITE_READONLY", (sql, err))
            self.assertIn("readOnly", err["message"], sql)
            self.assertIn(named, err["message"], sql)
        self.assertEqual(os.listdir(outside), [])
        # reading still works, pragmas that only read too
        rows = s.call("database/query", {"connectionId": cid, "sql": "SELECT x FROM t"})["rows"]
        self.assertEqual(rows, [{"x": 1}])
        s.call("database/query", {"connectionId": cid, "sql": "PRAGMA journal_mode"})
        s.call("database/query", {"connectionId": cid, "sql": "PRAGMA table_info(t)"})
        s.call("database/listTables", {"connectionId": cid})
        s.call("database/describeTable", {"connectionId": cid, "schema": "main", "table": "t"})
        # a transaction on a readOnly connection refuses its writes the same way
        result = s.call("database/transaction", {"connectionId": cid, "queries": [{"sql": "UPDATE t SET x = 3"}]})
        self.assertFalse(result["success"])
        self.assertIn("readOnly", json_text(result))
        db = sqlite3.connect(os.path.join(self.ws, "ro.db"))
        self.assertEqual(db.execute("SELECT x FROM t").fetchall(), [(1,)])
        self.assertEqual(db.execute("PRAGMA user_version").fetchone()[0], 0)
        db.close()
        self.assertEqual(s.close(), 0)

    def test_a_relative_path_stays_in_the_workspace(self):
        outside = os.path.join(self.tmp, "outside")
        os.mkdir(outside)
        os.symlink(outside, os.path.join(self.ws, "link"))
        s = self.server()
        for path in ("../outside/x.db", "../../x.db", "sub/../../outside/x.db", "link/x.db"):
            for method in ("database/createConnection", "database/testConnection"):
                err = s.error(method, {"config": {"name": "x", "type": "sqlite", "path": path}})
                self.assertEqual(err["code"], -32602, (method, path, err))
                self.assertIn(path, err["message"])
                self.assertIn("workspace", err["message"])
        self.assertEqual(os.listdir(outside), [])
        self.assertFalse(os.path.exists(os.path.join(os.path.dirname(self.tmp), "x.db")))
        # an update cannot move a connection out either
        cid = s.call("database/createConnection", {"config": {
            "name": "in", "type": "sqlite", "path": "sub/../inside.db"}})["connectionId"]
        err = s.error("database/updateConnection", {"connectionId": cid, "config": {"path": "../x.db"}})
        self.assertEqual(err["code"], -32602, err)
        s.call("database/connect", {"connectionId": cid})
        self.assertTrue(os.path.exists(os.path.join(self.ws, "inside.db")))
        # a symlink made after the connection was saved is still refused at connect
        cid = s.call("database/createConnection", {"config": {
            "name": "later", "type": "sqlite", "path": "later/x.db"}})["connectionId"]
        os.symlink(outside, os.path.join(self.ws, "later"))
        err = s.error("database/connect", {"connectionId": cid})
        self.assertIn("workspace", err["message"])
        self.assertEqual(os.listdir(outside), [])
        # an absolute path is the user's explicit choice
        cid = self.connect(s, os.path.join(outside, "mine.db"), False)
        self.assertTrue(os.path.exists(os.path.join(outside, "mine.db")))
        self.assertEqual(s.close(), 0)


def json_text(v):
    return test_session.json.dumps(v)


def wal_checksum(order, data, seed):
    """SQLite's WAL checksum of data, continuing from seed."""
    s1, s2 = seed
    for i in range(0, len(data), 8):
        a, b = struct.unpack(order + "II", data[i:i + 8])
        s1 = (s1 + a + s2) & 0xffffffff
        s2 = (s2 + b + s1) & 0xffffffff
    return s1, s2


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


class StoreTests(Base):
    def data(self, *names):
        return os.path.join(self.tmp, "data", *names)

    def killed_with_a_wal(self):
        """A server killed -9 after writing settings and unsaved text: state.db-wal holds them."""
        s = self.server()
        self.assertTrue(s.call("initialize", {})["capabilities"]["persistence"])
        s.call("config/set", {"key": "editor.fontSize", "value": 17})
        s.call("session/save", {"name": "kept"})
        s.call("ecp/ping", {})
        s.kill()
        wal = self.data("state.db-wal")
        self.assertGreater(os.path.getsize(wal), 0)
        return wal

    def damaged_copies(self):
        return sorted(os.path.basename(p) for p in glob.glob(self.data("state.db.damaged-*")))

    def restart_after_removing(self, *names):
        for name in names:
            if os.path.exists(self.data(name)):
                os.unlink(self.data(name))
        s = self.server()
        self.assertTrue(s.call("initialize", {})["capabilities"]["persistence"])
        s.call("config/set", {"key": "editor.tabSize", "value": 3})
        self.assertEqual(s.close(), 0)
        s = self.server()
        self.assertTrue(s.call("initialize", {})["capabilities"]["persistence"])
        self.assertEqual(s.call("config/get", {"key": "editor.tabSize"}), {"value": 3})
        self.assertEqual(s.close(), 0)

    def test_garbage_over_the_wal_is_noticed(self):
        wal = self.killed_with_a_wal()
        size = os.path.getsize(wal)
        with open(wal, "r+b") as f:
            f.write(os.urandom(size))
        damaged = read_bytes(wal)
        log = os.path.join(self.tmp, "ecpd.log")
        s = self.server(log=log)
        self.assertFalse(s.call("initialize", {})["capabilities"]["persistence"])
        s.call("config/set", {"key": "editor.fontSize", "value": 9})
        self.assertEqual(s.call("config/get", {"key": "editor.fontSize"}), {"value": 9})
        self.assertEqual(s.close(), 0)
        copies = self.damaged_copies()
        self.assertEqual(len(copies), 2, copies)
        self.assertTrue(copies[1].endswith("-wal"), copies)
        self.assertEqual(read_bytes(self.data(copies[1])), damaged)
        with open(log) as f:
            text = f.read()
        self.assertIn("damaged", text)
        self.assertIn(copies[0], text)
        # a second start does not pile up identical copies
        s = self.server()
        self.assertFalse(s.call("initialize", {})["capabilities"]["persistence"])
        self.assertEqual(s.close(), 0)
        self.assertEqual(self.damaged_copies(), copies)
        self.restart_after_removing("state.db", "state.db-wal", "state.db-shm")

    def test_a_wal_damaged_in_its_middle_is_noticed(self):
        wal = self.killed_with_a_wal()
        size = os.path.getsize(wal)
        self.assertGreater(size, 32 + 3 * (24 + 4096))
        with open(wal, "r+b") as f:
            f.seek(32 + 24 + 100)  # inside the first frame's page
            f.write(b"\xff" * 64)
        s = self.server()
        self.assertFalse(s.call("initialize", {})["capabilities"]["persistence"])
        self.assertEqual(s.close(), 0)
        self.assertEqual(len(self.damaged_copies()), 2)

    def test_what_a_kill_during_a_commit_leaves_is_not_damage(self):
        # A writer killed while writing a transaction leaves frames that never
        # committed; the next writer starts again after the last commit, so
        # the first of them stops checking out while the rest still chain.
        wal = self.killed_with_a_wal()
        with open(wal, "rb") as f:
            data = bytearray(f.read())
        magic, page_size = struct.unpack(">II", data[0:4] + data[8:12])
        order = ">" if magic & 1 else "<"
        frame_size = 24 + page_size
        frames = (len(data) - 32) // frame_size
        del data[32 + frames * frame_size:]
        salts = bytes(data[16:24])
        prev = struct.unpack(">II", data[32 + (frames - 1) * frame_size + 16:][:8])
        for n in range(4):
            page = bytes(data[32 + 24:32 + frame_size])  # a copy of the first frame's page
            head = struct.pack(">II", 1, 0) + salts
            if n == 0:
                s1, s2 = 0x12345678, 0x9abcdef0  # chains from the overwritten frame, not from the last commit
            else:
                s1, s2 = wal_checksum(order, head[:8] + page, prev)
            data += head + struct.pack(">II", s1, s2) + page
            prev = (s1, s2)
        with open(wal, "wb") as f:
            f.write(data)
        s = self.server()
        self.assertTrue(s.call("initialize", {})["capabilities"]["persistence"])
        self.assertEqual(s.call("config/get", {"key": "editor.fontSize"}), {"value": 17})
        self.assertEqual(s.close(), 0)
        self.assertEqual(self.damaged_copies(), [])

    def test_a_state_db_that_is_not_sqlite_is_kept_aside(self):
        os.makedirs(self.data())
        junk = b"definitely not SQLite " * 500
        with open(self.data("state.db"), "wb") as f:
            f.write(junk)
        s = self.server()
        self.assertFalse(s.call("initialize", {})["capabilities"]["persistence"])
        self.assertEqual(s.close(), 0)
        copies = self.damaged_copies()
        self.assertEqual(len(copies), 1, copies)
        self.assertEqual(read_bytes(self.data(copies[0])), junk)
        self.assertEqual(read_bytes(self.data("state.db")), junk)
        self.restart_after_removing("state.db")

    def test_a_corrupt_page_is_found_by_the_check_at_start(self):
        s = self.server()
        for i in range(200):
            s.call("secret/set", {"key": "k%d" % i, "value": "v" * 200})
        self.assertEqual(s.close(), 0)
        size = os.path.getsize(self.data("state.db"))
        with open(self.data("state.db"), "r+b") as f:
            f.seek(size - 4096 + 8)  # inside the last page, after its header
            f.write(b"\x00\xff" * 200)
        s = self.server()
        self.assertFalse(s.call("initialize", {})["capabilities"]["persistence"])
        self.assertEqual(s.close(), 0)
        self.assertEqual(len(self.damaged_copies()), 1)


class JournalTests(Base):
    def dirty(self, s, name, text):
        path = os.path.join(self.ws, name)
        if not os.path.exists(path):
            with open(path, "w") as f:
                f.write("base\n")
        doc = s.call("document/open", {"uri": "file://" + path})["documentId"]
        s.call("document/insert", {"documentId": doc, "position": {"line": 0, "column": 0}, "text": text})
        return "file://" + path

    def rows(self):
        db = sqlite3.connect("file:%s?mode=ro" % os.path.join(self.tmp, "data", "state.db"), uri=True, timeout=5)
        try:
            return sorted((o, u, c.decode()) for (o, u, c) in
                          db.execute("SELECT owner, uri, content FROM journal"))
        finally:
            db.close()

    def wait_rows(self, n):
        deadline = time.time() + 30
        while time.time() < deadline and len(self.rows()) < n:
            time.sleep(0.05)
        self.assertEqual(len(self.rows()), n)

    def test_recovering_one_killed_servers_text_keeps_the_others(self):
        a = self.server()
        a.call("initialize", {})
        b = self.server()
        b.call("initialize", {})
        shared = self.dirty(a, "shared.txt", "from a ")
        self.wait_rows(1)
        time.sleep(0.05)
        self.dirty(b, "shared.txt", "from b ")
        only_b = self.dirty(b, "b.txt", "only b ")
        self.wait_rows(3)
        a.kill()
        b.kill()
        before = self.rows()
        b_text = [r for r in before if r[1] == shared and r[2].startswith("from b")]
        self.assertEqual(len(b_text), 1)

        c = self.server()
        listed = c.call("session/recoverable")["documents"]
        self.assertEqual(sorted(d["uri"] for d in listed), sorted([shared, only_b]))
        recovered = c.call("session/recover", {"uris": [shared]})["documents"]
        self.assertEqual(len(recovered), 1)
        text = c.call("document/content", {"documentId": recovered[0]["documentId"]})["content"]
        self.assertTrue(text.startswith("from b"), text)  # the newest copy
        c.kill()

        # a's copy of the shared file, which nobody was given, is still there
        after = self.rows()
        self.assertTrue(any(r[1] == shared and r[2].startswith("from a") for r in after), after)
        self.assertTrue(any(r[1] == only_b for r in after), after)

        d = self.server()
        listed = d.call("session/recoverable")["documents"]
        self.assertEqual(sorted(x["uri"] for x in listed), sorted([shared, only_b]))
        docs = {x["uri"]: x["documentId"] for x in d.call("session/recover")["documents"]}
        self.assertEqual(sorted(docs), sorted([shared, only_b]))
        self.assertTrue(d.call("document/content", {"documentId": docs[shared]})["content"].startswith("from b"))
        self.assertTrue(d.call("document/content", {"documentId": docs[only_b]})["content"].startswith("only b"))
        # dropping b's text of the shared file brings a's copy, which nobody was given, up
        d.call("document/close", {"documentId": docs[shared]})
        d.call("ecp/ping", {})
        deadline = time.time() + 10
        while time.time() < deadline and shared not in [x["uri"] for x in d.call("session/recoverable")["documents"]]:
            time.sleep(0.05)
        doc = d.call("session/recover", {"uris": [shared]})["documents"]
        self.assertEqual(len(doc), 1)
        text = d.call("document/content", {"documentId": doc[0]["documentId"]})["content"]
        self.assertTrue(text.startswith("from a"), text)
        d.kill()

if __name__ == "__main__":
    test_session.ECPD = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
