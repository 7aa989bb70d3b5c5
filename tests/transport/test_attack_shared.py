#!/usr/bin/env python3
"""A shared server under attack: hostile clients and a hostile repository.

usage: test_attack_shared.py ECPD

Several clients share one ecpd --socket on a workspace somebody just cloned.
One of them dies mid-request, floods, closes a document a thousand times or
opens one file under many names; the repository carries hostile
.editorconfig files, catastrophic patterns and project files that would make
a language server run something. Whatever happens, the others' text is never
lost, holds and cursors stay exact, bad input gets a JSON-RPC error with the
right code, and a ping from another client is answered promptly.
"""
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

ECPD = None


class Server:
    def __init__(self, tmp, workspace, env=None):
        self.path = os.path.join(tmp, "run", "ecpd.sock")
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        self.data = os.path.join(tmp, "data")
        self.workspace = workspace
        self.p = subprocess.Popen([ECPD, "--socket", self.path, "--data-dir", self.data, "--workspace", workspace],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  env=env)
        self.err = []
        threading.Thread(target=self._drain, daemon=True).start()
        deadline = time.time() + 10
        while True:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.connect(self.path)
                break
            except OSError:
                if time.time() > deadline or self.p.poll() is not None:
                    raise RuntimeError("server did not start: " + "".join(self.err))
                time.sleep(0.01)
            finally:
                s.close()

    def _drain(self):
        for line in self.p.stderr:
            self.err.append(line.decode(errors="replace"))

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
        try:
            return self.p.wait(30)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            raise


class Client:
    def __init__(self, srv):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.connect(srv.path)
        self.s.settimeout(30)
        self.f = self.s.makefile("rb")
        self.next_id = 1
        self.notes = []
        self.early = {}
        self.id = self.request("initialize", {})["clientId"]

    def send(self, method, params=None):
        id_ = self.next_id
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": id_, "method": method}
        if params is not None:
            msg["params"] = params
        self.s.sendall((json.dumps(msg) + "\n").encode())
        return id_

    def answer(self, id_):
        """The response to id_; responses to others that come first are kept."""
        if id_ in self.early:
            return self.early.pop(id_)
        while True:
            line = self.f.readline()
            if not line:
                raise EOFError("connection closed")
            m = json.loads(line)
            if "method" in m and "id" not in m:
                self.notes.append(m)
                continue
            if m.get("id") == id_:
                return m
            self.early[m.get("id")] = m

    def request(self, method, params=None, error=False):
        m = self.answer(self.send(method, params))
        if error:
            if "error" not in m:
                raise AssertionError("%s: expected an error, got %s" % (method, str(m)[:300]))
            return m["error"]
        if "error" in m:
            raise AssertionError("%s: %s" % (method, m["error"]))
        return m["result"]

    def ping_time(self):
        t = time.monotonic()
        self.request("ecp/ping")
        return time.monotonic() - t

    def close(self):
        try:
            self.f.close()
            self.s.close()
        except OSError:
            pass


def at(line, column):
    return {"line": line, "column": column}


class Shared(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ecpd-attack-")
        self.ws = os.path.join(self.tmp, "ws")
        os.makedirs(self.ws)
        self.srv = None
        self.clients = []

    def tearDown(self):
        for c in self.clients:
            c.close()
        if self.srv:
            code = self.srv.stop()
            err = "".join(self.srv.err)
            self.assertNotIn("AddressSanitizer", err)
            self.assertNotIn("runtime error", err)
            self.assertEqual(code, 0, err[-3000:])

    def start(self, env=None):
        self.srv = Server(self.tmp, self.ws, env)

    def connect(self):
        c = Client(self.srv)
        self.clients.append(c)
        return c

    def file(self, name, text):
        path = os.path.join(self.ws, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(text.encode() if isinstance(text, str) else text)
        return path

    def open(self, c, path):
        return c.request("document/open", {"uri": "file://" + path})["documentId"]

    def content(self, c, doc):
        return c.request("document/content", {"documentId": doc})["content"]

    def holders(self, c, doc):
        return sorted(x["clientId"] for x in c.request("document/clients", {"documentId": doc})["clients"])

    def listed(self, c):
        return [d["documentId"] for d in c.request("document/list")["documents"]]

    # --- clients that die, flood and repeat themselves -------------------------

    def test_a_client_dying_mid_find_mid_save_and_while_holding_loses_nobody_text(self):
        self.start()
        big = self.file("big.txt", ("a" * 99 + "\n") * (50 << 10) * 10)  # 50 MiB
        small = self.file("small.txt", "one\n")
        a, b = self.connect(), self.connect()
        big_doc = self.open(b, big)
        self.assertEqual(self.open(a, big), big_doc)
        # a asks for a long search and goes away while it runs
        a.send("document/find", {"documentId": big_doc, "query": "a+b", "regex": True, "limit": 100000})
        a.close()
        self.assertLess(b.ping_time(), 2.0)
        self.assertEqual(self.holders(b, big_doc), [b.id])
        found = b.request("document/find", {"documentId": big_doc, "query": "aaa\n", "limit": 5})
        self.assertEqual(found["total"], 100000)
        self.assertTrue(found.get("totalCapped"))

        # c holds a document b edits, types into it, and dies while saving it
        c = self.connect()
        doc = self.open(c, small)
        self.assertEqual(self.open(b, small), doc)
        b.request("document/type", {"documentId": doc, "text": "B"})
        c.request("document/type", {"documentId": doc, "text": "C"})
        c.send("document/save", {"documentId": doc})
        c.s.shutdown(socket.SHUT_RDWR)
        c.close()
        b.request("document/type", {"documentId": doc, "text": "b"})
        self.assertEqual(self.content(b, doc), "BCbone\n")
        self.assertEqual(self.holders(b, doc), [b.id])
        self.assertIn(doc, self.listed(b))
        self.assertEqual(b.request("document/save", {"documentId": doc})["success"], True)
        with open(small) as f:
            self.assertEqual(f.read(), "BCbone\n")

        # the only holder of a dirty document dies: it stays, with its text
        d = self.connect()
        lone = self.file("lone.txt", "x\n")
        lone_doc = self.open(d, lone)
        d.request("document/type", {"documentId": lone_doc, "text": "kept "})
        d.close()
        b.ping_time()
        self.assertIn(lone_doc, self.listed(b))
        self.assertEqual(self.content(b, lone_doc), "kept x\n")
        self.assertEqual(self.holders(b, lone_doc), [])

    def test_a_close_or_a_disconnect_right_behind_a_save(self):
        self.start()
        a, b = self.connect(), self.connect()
        for i in range(20):
            path = self.file("s%d.txt" % i, "old\n" * 1000)
            doc = self.open(a, path)
            a.request("document/type", {"documentId": doc, "text": "new%d " % i})
            save = a.send("document/save", {"documentId": doc})
            if i % 2:
                a.s.sendall((json.dumps({"jsonrpc": "2.0", "id": 90000 + i, "method": "document/close",
                                         "params": {"documentId": doc}}) + "\n").encode())
                self.assertTrue(a.answer(save)["result"]["success"])
                a.answer(90000 + i)
            else:
                a.close()
                self.clients.remove(a)
                a = self.connect()
            self.assertLess(b.ping_time(), 2.0)
            deadline = time.time() + 5
            while time.time() < deadline and not open(path).read().startswith("new%d " % i):
                time.sleep(0.02)
            with open(path) as f:
                self.assertEqual(f.read(), "new%d " % i + "old\n" * 1000)
        b.request("ecp/ping")
        for d in b.request("document/list")["documents"]:
            self.assertFalse(d["isDirty"], d)

    def test_a_flood_of_typing_beside_another_client_typing_and_saving(self):
        self.start()
        path = self.file("f.txt", "\n")
        a, b = self.connect(), self.connect()
        doc = self.open(a, path)
        self.open(b, path)
        b.request("document/setCursor", {"documentId": doc, "position": at(1, 0)})
        n = 2000
        batch = "".join(json.dumps({"jsonrpc": "2.0", "id": 10000 + i, "method": "document/type",
                                    "params": {"documentId": doc, "text": "a"}}) + "\n" for i in range(n))
        a.s.sendall(batch.encode())
        for i in range(20):
            b.request("document/type", {"documentId": doc, "text": "b"})
            if i % 5 == 0:
                self.assertTrue(b.request("document/save", {"documentId": doc})["success"])
        self.assertLess(b.ping_time(), 2.0)
        last = a.answer(10000 + n - 1)
        self.assertTrue(last["result"]["success"])
        text = self.content(b, doc)
        self.assertEqual(text, "a" * n + "\n" + "b" * 20)
        self.assertTrue(b.request("document/save", {"documentId": doc})["success"])
        with open(path) as f:
            self.assertEqual(f.read(), text)
        # a floods again and dies without reading a single answer
        a.s.sendall(batch.encode())
        a.s.shutdown(socket.SHUT_RDWR)
        a.close()
        self.assertLess(b.ping_time(), 5.0)
        self.assertEqual(self.holders(b, doc), [b.id])
        self.assertTrue(self.content(b, doc).endswith("\n" + "b" * 20))

    def test_a_thousand_closes_release_one_hold_and_nobody_elses(self):
        self.start()
        path = self.file("c.txt", "text\n")
        a, b = self.connect(), self.connect()
        doc = self.open(a, path)
        self.open(b, path)
        b.request("document/type", {"documentId": doc, "text": "mine "})
        batch = "".join(json.dumps({"jsonrpc": "2.0", "id": 5000 + i, "method": "document/close",
                                    "params": {"documentId": doc}}) + "\n" for i in range(1000))
        a.s.sendall(batch.encode())
        a.answer(5999)
        self.assertEqual(self.holders(b, doc), [b.id])
        self.assertEqual(self.content(b, doc), "mine text\n")
        self.assertIn(doc, self.listed(a))
        # holding again is one hold, and b's thousand closes leave a's
        self.assertEqual(self.open(a, path), doc)
        b.s.sendall(batch.encode())
        b.answer(5999)
        self.assertEqual(self.holders(a, doc), [a.id])
        self.assertEqual(self.content(a, doc), "mine text\n")
        a.request("document/close", {"documentId": doc})
        self.assertNotIn(doc, self.listed(a))
        self.assertEqual(a.request("document/close", {"documentId": doc}), {"success": False})

    def test_one_file_under_many_names_is_one_document_and_one_hold(self):
        self.start()
        path = self.file("sub/a.txt", "same\n")
        os.symlink(path, os.path.join(self.ws, "link.txt"))
        os.symlink(os.path.join(self.ws, "sub"), os.path.join(self.ws, "dirlink"))
        os.link(path, os.path.join(self.ws, "hard.txt"))
        names = [path, self.ws + "//sub/./a.txt", self.ws + "/sub/../sub/a.txt", self.ws + "/link.txt",
                 self.ws + "/dirlink/a.txt", self.ws + "/hard.txt", self.ws + "/sub/%61.txt"]
        a, b = self.connect(), self.connect()
        ids = set()
        for name in names:
            ids.add(a.request("document/open", {"uri": "file://" + name})["documentId"])
            if "%" not in name:
                ids.add(a.request("document/open", {"uri": name})["documentId"])
        self.assertEqual(len(ids), 1, ids)
        doc = ids.pop()
        self.assertEqual(self.holders(a, doc), [a.id])
        self.assertEqual(self.listed(a), [doc])
        self.assertEqual(self.open(b, self.ws + "/hard.txt"), doc)
        b.request("document/type", {"documentId": doc, "text": "b:"})
        a.request("document/setCursor", {"documentId": doc, "position": at(0, 4)})
        a.request("document/type", {"documentId": doc, "text": "!"})
        self.assertEqual(self.content(b, doc), "b:sa!me\n")
        # one close of a's many spellings is a's one hold
        a.request("document/close", {"documentId": doc})
        self.assertEqual(self.holders(b, doc), [b.id])
        b.close()
        self.clients.remove(b)
        a.request("ecp/ping")
        # nobody holds it and it is dirty: it stays, under its first name
        docs = a.request("document/list")["documents"]
        self.assertEqual([d["documentId"] for d in docs], [doc])
        self.assertTrue(docs[0]["isDirty"])
        # hot exit keeps one text for the file, not one per name
        time.sleep(1.5)
        self.srv.p.kill()
        self.srv.p.wait()
        self.start()
        c = self.connect()
        rec = c.request("session/recoverable")["documents"]
        self.assertEqual(len(rec), 1, rec)
        got = c.request("session/recover", {})
        self.assertEqual(len(got["documents"]), 1)
        self.assertEqual(self.content(c, got["documents"][0]["documentId"]), "b:sa!me\n")
        self.assertEqual(self.open(c, self.ws + "/link.txt"), got["documents"][0]["documentId"])

    def test_a_client_gone_before_its_open_lands_holds_nothing(self):
        self.start()
        big = self.file("big.txt", "x" * (8 << 20) + "\n")
        a, b = self.connect(), self.connect()
        for spelling in (big, self.ws + "//big.txt"):
            a.send("document/open", {"uri": "file://" + spelling})
        a.s.shutdown(socket.SHUT_RDWR)
        a.close()
        time.sleep(0.5)
        b.request("ecp/ping")
        for d in self.listed(b):
            self.assertEqual(self.holders(b, d), [])
        doc = self.open(b, big)
        self.assertEqual(self.holders(b, doc), [b.id])
        b.request("document/close", {"documentId": doc})
        self.assertEqual(self.listed(b), [])
        # five clients open it at once under five names; one leaves mid-read
        os.symlink(big, self.ws + "/big-link.txt")
        os.link(big, self.ws + "/big-hard.txt")
        names = [big, self.ws + "/big-link.txt", self.ws + "/big-hard.txt", self.ws + "/./big.txt",
                 self.ws + "/x/../big.txt"]
        cs = [self.connect() for _ in range(5)]
        ids = [c.send("document/open", {"uri": "file://" + n}) for c, n in zip(cs, names)]
        cs[2].close()
        got = {c.answer(i)["result"]["documentId"] for k, (c, i) in enumerate(zip(cs, ids)) if k != 2}
        self.assertEqual(len(got), 1, got)
        doc = got.pop()
        b.request("ecp/ping")
        self.assertEqual(self.holders(b, doc), sorted(c.id for k, c in enumerate(cs) if k != 2))
        self.assertEqual(self.listed(b), [doc])

    def test_cursors_are_bounded_so_typing_at_them_does_not_stall_the_others(self):
        self.start()
        lines = 10001
        path = self.file("cur.txt", "x\n" * lines)
        cs = [self.connect() for _ in range(3)]
        doc = self.open(cs[0], path)
        for c in cs[1:]:
            self.open(c, path)
        many = [{"position": at(i, 0)} for i in range(lines)]
        err = cs[0].request("document/setCursors", {"documentId": doc, "cursors": many}, error=True)
        self.assertEqual(err["code"], -32602, err)
        self.assertIn("at most 10000", err["message"])
        for c in cs:
            self.assertTrue(c.request("document/setCursors", {"documentId": doc, "cursors": many[:10000]})["success"])
        err = cs[0].request("document/addCursor", {"documentId": doc, "position": at(10000, 0)}, error=True)
        self.assertEqual(err["code"], -32602, err)
        t = time.monotonic()
        self.assertTrue(cs[0].request("document/type", {"documentId": doc, "text": "ab"})["success"])
        took = time.monotonic() - t
        print("typing at 3 x 10,000 cursors took %.2f s" % took, file=sys.stderr)
        self.assertLess(took, 30.0)
        self.assertLess(cs[2].ping_time(), 1.0)
        self.assertEqual(cs[1].request("document/line", {"documentId": doc, "lineNumber": 9999})["text"], "abx")
        self.assertEqual(cs[1].request("document/line", {"documentId": doc, "lineNumber": 10000})["text"], "x")

    def test_five_clients_two_of_them_dying_keep_every_text_and_cursor(self):
        self.start()
        path = self.file("five.txt", "".join("line %d\n" % i for i in range(5)))
        cs = [self.connect() for _ in range(5)]
        doc = self.open(cs[0], path)
        for i, c in enumerate(cs):
            self.assertEqual(self.open(c, path), doc)
            c.request("document/setCursor", {"documentId": doc, "position": at(i, 0)})
        for round_ in range(3):
            for i, c in enumerate(cs):
                c.request("document/type", {"documentId": doc, "text": str(i)})
        # one dies mid-request, one between requests
        cs[1].send("document/type", {"documentId": doc, "text": "!"})
        cs[1].s.shutdown(socket.SHUT_RDWR)
        cs[1].close()
        cs[3].close()
        live = [cs[0], cs[2], cs[4]]
        for i, c in zip((0, 2, 4), live):
            c.request("document/type", {"documentId": doc, "text": "."})
        text = self.content(cs[0], doc).split("\n")
        for i in (0, 2, 4):
            self.assertEqual(text[i], "%s.line %d" % (str(i) * 3, i))
        self.assertEqual(text[3], "333line 3")
        self.assertIn(text[1], ("111line 1", "111!line 1"))
        self.assertEqual(self.holders(cs[0], doc), sorted(c.id for c in live))
        clients = cs[0].request("document/clients", {"documentId": doc})["clients"]
        for entry in clients:
            i = [c.id for c in cs].index(entry["clientId"])
            self.assertEqual(entry["cursors"][0]["position"], at(i, 4))
        self.assertTrue(cs[4].request("document/save", {"documentId": doc})["success"])
        for c in live:
            c.request("document/close", {"documentId": doc})
        self.assertEqual(self.listed(cs[0]), [])
        with open(path) as f:
            self.assertEqual(f.read().split("\n")[0], "000.line 0")

    # --- a hostile repository ---------------------------------------------------

    def test_hostile_editorconfig_files_are_ignored_or_bounded(self):
        sub = os.path.join(self.ws, "deep")
        os.makedirs(sub)
        nested = "a"
        for _ in range(1000):
            nested = "{a," + nested + "}"
        with open(os.path.join(self.ws, ".editorconfig"), "wb") as f:
            f.write(("[" + nested + ".txt]\nindent_style = tab\n[{1..99999999999}.txt]\nindent_style = tab\n"
                     "[*.txt]\nindent_size = 99999999\ntab_width = -1\ncharset = " + "x" * 3000 + "\n"
                     "[*.py]\nindent_style = space\nindent_size = 3\n").encode() +
                    b"[\xff\xfe*.md]\nindent_size = \xc3\x28\n")
        long_dir = os.path.join(self.ws, "long")
        os.makedirs(long_dir)
        with open(os.path.join(long_dir, ".editorconfig"), "w") as f:
            f.write("[*]\nindent_size = 2\ncharset = " + "y" * 20000 + "\n")
        # a line libeditorconfig cannot parse (it loses memory on such a file)
        os.makedirs(os.path.join(self.ws, "typo"))
        with open(os.path.join(self.ws, "typo", ".editorconfig"), "w") as f:
            f.write("[*]\nindent_size = 2\nnovalue\n[unclosed\n")
        os.makedirs(os.path.join(self.ws, "bytes"))
        with open(os.path.join(self.ws, "bytes", ".editorconfig"), "wb") as f:
            f.write(b"[*]\ncharset = \xff\xfe\xc3(\xe2\x82\nend_of_line = \xff\nindent_style = \xc3\n")
        os.makedirs(os.path.join(self.ws, "bom"))
        with open(os.path.join(self.ws, "bom", ".editorconfig"), "wb") as f:
            f.write(b"\xef\xbb\xbf# ok\n[*]\n  indent_size = 2 ; two\n\n; comment\n")
        os.symlink("/dev/zero", os.path.join(sub, ".editorconfig"))
        fifo_dir = os.path.join(self.ws, "fifo")
        os.makedirs(fifo_dir)
        os.mkfifo(os.path.join(fifo_dir, ".editorconfig"))
        many_dir = os.path.join(self.ws, "many")
        os.makedirs(many_dir)
        with open(os.path.join(many_dir, ".editorconfig"), "w") as f:
            f.write("".join("[f%d.txt]\nindent_size = 2\n" % i for i in range(3000)))
        huge_dir = os.path.join(self.ws, "huge")
        os.makedirs(huge_dir)
        with open(os.path.join(huge_dir, ".editorconfig"), "w") as f:
            f.write("[*]\nindent_size = 2\n" + "# " + "x" * (1 << 20) + "\n")
        outside = tempfile.mkdtemp(prefix="ecpd-outside-")
        with open(os.path.join(outside, ".editorconfig"), "w") as f:
            f.write("root = true\n[*]\nindent_style = tab\n")
        os.makedirs(os.path.join(self.ws, "linked"))
        os.symlink(os.path.join(outside, ".editorconfig"), os.path.join(self.ws, "linked", ".editorconfig"))
        with open(os.path.join(outside, "o.txt"), "w") as f:
            f.write("o\n")
        self.start()
        a, b = self.connect(), self.connect()

        def info(path):
            doc = self.open(a, path)
            t = time.monotonic()
            got = a.request("document/info", {"documentId": doc})
            self.assertLess(time.monotonic() - t, 2.0, path)
            return doc, got

        doc, got = info(self.file("x.txt", "x\n"))
        self.assertEqual(got["indent"], {"style": "spaces", "size": 4})
        self.assertLessEqual(len(got.get("charset", "")), 64)
        a.request("document/setCursor", {"documentId": doc, "position": at(0, 0)})
        self.assertTrue(a.request("document/indent", {"documentId": doc})["success"])
        self.assertEqual(self.content(a, doc), "    x\n")
        self.assertEqual(info(self.file("y.py", "y\n"))[1]["indent"], {"style": "spaces", "size": 3})
        self.assertEqual(info(self.file("bom/z.txt", "z\n"))[1]["indent"], {"style": "spaces", "size": 2})
        got = info(self.file("bytes/z.txt", "z\n"))[1]
        self.assertEqual(got["indent"], {"style": "spaces", "size": 4})
        self.assertNotIn("endOfLine", got)
        self.assertLessEqual(len(got.get("charset", "")), 64)
        for name in ("deep/z.txt", "fifo/z.txt", "many/f1.txt", "huge/z.txt", "linked/z.txt", "n.md", "a.txt",
                     "long/z.txt", "typo/z.txt"):
            self.assertEqual(info(self.file(name, "z\n"))[1]["indent"], {"style": "spaces", "size": 4}, name)
        self.assertEqual(info(os.path.join(outside, "o.txt"))[1]["indent"], {"style": "spaces", "size": 4})
        self.assertLess(b.ping_time(), 1.0)

    def test_editorconfig_globs_that_backtrack_do_not_stall_the_server(self):
        self.file(".editorconfig", "".join("[*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a%db]\nindent_size = 2\n" % i
                                           for i in range(250)))
        # The globs are matched against a copy under TMPDIR; a "b" in its path makes every one of them
        # backtrack (about 20 s in all), where a path without one fails at once.
        tmpdir = os.path.join(self.tmp, "tmpb")
        os.mkdir(tmpdir)
        self.start(dict(os.environ, TMPDIR=tmpdir))
        a, b = self.connect(), self.connect()
        doc = self.open(a, self.file("a" * 200 + ".txt", "x\n"))
        done = []
        t = threading.Thread(target=lambda: done.append(a.request("document/info", {"documentId": doc})))
        t.start()
        time.sleep(0.2)
        self.assertLess(b.ping_time(), 1.0)
        t.join(30)
        self.assertEqual(done[0]["indent"], {"style": "spaces", "size": 4})

    def test_a_slow_editorconfig_is_read_off_the_loop(self):
        # 250 globs of three wildcards are kept, and take seconds against a long name when the copy's
        # path has a "b"; the last section applies to every .txt file.
        self.file(".editorconfig", "".join("[*a*a*a%db]\nindent_size = 2\n" % i for i in range(250)) +
                  "[*.txt]\nindent_style = space\nindent_size = 3\n")
        tmpdir = os.path.join(self.tmp, "tmpb")
        os.mkdir(tmpdir)
        self.start(dict(os.environ, TMPDIR=tmpdir))
        a, b = self.connect(), self.connect()
        doc = self.open(a, self.file("a" * 200 + ".txt", "x\n"))
        t = time.monotonic()
        first = a.request("document/info", {"documentId": doc})
        self.assertLess(time.monotonic() - t, 1.0)
        self.assertLess(b.ping_time(), 1.0)
        # while the files are read the document has no .editorconfig values; once read, it has them
        deadline = time.monotonic() + 60
        while a.request("document/info", {"documentId": doc})["indent"] != {"style": "spaces", "size": 3}:
            self.assertLess(time.monotonic(), deadline, "the .editorconfig values never landed")
            self.assertLess(b.ping_time(), 1.0)
            time.sleep(0.1)
        self.assertEqual(first["indent"], {"style": "spaces", "size": 4})

    def test_slow_editorconfig_lookups_leave_the_pool_to_other_clients(self):
        # Each of these lookups takes a second or more (see above). Eight of them held every pool thread, and
        # another client's file/read waited 10 s; one at a time, the rest of the pool stays free.
        self.file(".editorconfig", "".join("[*a*a*a%db]\nindent_size = 2\n" % i for i in range(250)) +
                  "[*.txt]\nindent_style = space\nindent_size = 3\n")
        small = self.file("small.txt", "hello\n")
        tmpdir = os.path.join(self.tmp, "tmpb")
        os.mkdir(tmpdir)
        self.start(dict(os.environ, TMPDIR=tmpdir))
        a, b = self.connect(), self.connect()
        docs = [self.open(a, self.file("a" * 200 + "%d.txt" % i, "x\n")) for i in range(8)]
        t = time.monotonic()
        for doc in docs:
            a.request("document/info", {"documentId": doc})
        # the loop waits for a lookup at most 100 ms, and not at all once others wait their turn
        self.assertLess(time.monotonic() - t, 2.0)
        for _ in range(3):
            t = time.monotonic()
            self.assertEqual(b.request("file/read", {"uri": "file://" + small})["content"], "hello\n")
            self.assertLess(time.monotonic() - t, 1.0)
            self.assertLess(b.ping_time(), 1.0)
            time.sleep(0.3)
        # the first document's turn came first
        deadline = time.monotonic() + 60
        while a.request("document/info", {"documentId": docs[0]})["indent"] != {"style": "spaces", "size": 3}:
            self.assertLess(time.monotonic(), deadline, "the first document's .editorconfig values never landed")
            time.sleep(0.1)

    def test_find_and_replace_with_hostile_patterns_and_sizes(self):
        self.start()
        a, b = self.connect(), self.connect()
        doc = self.open(a, self.file("f.txt", "a" * 100000 + "\nxyz\n" + "a" * 40 + "!\n"))
        err = a.request("document/find", {"documentId": doc, "query": "(a+)+$", "regex": True}, error=True)
        self.assertEqual(err["code"], -32602, err)
        self.assertIn("match limit", err["message"])
        self.assertLess(b.ping_time(), 1.0)
        got = a.request("document/find", {"documentId": doc, "query": "a", "limit": 100000})
        self.assertEqual(got["total"], 100000)
        self.assertTrue(got["totalCapped"])
        for limit in (-1, 0, 1.5, "x", 100001, 10 ** 12, 2 ** 64):
            err = a.request("document/find", {"documentId": doc, "query": "a", "limit": limit}, error=True)
            self.assertEqual(err["code"], -32602, (limit, err))
        err = a.request("document/find", {"documentId": doc, "query": "a", "from": at(99, 0)}, error=True)
        self.assertEqual(err["code"], -32003, err)
        err = a.request("document/find", {"documentId": doc, "query": "a", "from": at(1, 2 ** 40)}, error=True)
        self.assertEqual(err["code"], -32003, err)
        err = a.request("document/find", {"documentId": doc, "query": "(", "regex": True}, error=True)
        self.assertEqual(err["code"], -32602, err)
        a.request("document/setCursor", {"documentId": doc, "position": at(1, 0)})
        got = a.request("document/replace", {"documentId": doc, "query": "(x)(y)", "regex": True,
                                             "replacement": "[$99${1}${999}$$]"})
        self.assertTrue(got["success"], got)
        self.assertEqual(a.request("document/line", {"documentId": doc, "lineNumber": 1})["text"], "[x$]z")
        err = a.request("document/replace", {"documentId": doc, "query": "(a+)+$", "regex": True,
                                             "replacement": "", "all": True}, error=True)
        self.assertEqual(err["code"], -32602, err)
        self.assertLess(b.ping_time(), 1.0)
        # patterns PCRE2 can only interpret rescan the text at every match
        many = self.open(a, self.file("many.txt", "x" * 900000 + "\n"))
        for query in (r"(*NO_JIT)x", r"\C", r"(*NO_JIT)(*UTF)x"):
            for method, extra in (("document/find", {}), ("document/replace", {"replacement": "y", "all": True})):
                t = time.monotonic()
                err = a.request(method, dict(extra, documentId=many, query=query, regex=True), error=True)
                self.assertEqual(err["code"], -32602, (query, err))
                self.assertLess(time.monotonic() - t, 2.0)
        self.assertEqual(a.request("document/find", {"documentId": many, "query": "x", "regex": True})["total"], 100000)
        # a replacement of 64 MiB is an edit like any other, and undoes
        big = "r" * (64 << 20)
        got = a.request("document/replace", {"documentId": doc, "query": "z", "replacement": big})
        self.assertTrue(got["success"], str(got)[:200])
        self.assertEqual(a.request("document/info", {"documentId": doc})["lineCount"], 4)
        self.assertTrue(a.request("document/undo", {"documentId": doc})["success"])
        self.assertEqual(a.request("document/line", {"documentId": doc, "lineNumber": 1})["text"], "[x$]z")

    def test_text_multiplied_by_cursors_or_matches_is_bounded(self):
        self.start()
        a, b = self.connect(), self.connect()
        doc = self.open(a, self.file("m.txt", ("a" * 1000 + "\n") * 100))
        self.open(b, self.ws + "/m.txt")
        # 400 KB of group references at each of 100 matches of 1000 bytes: 20 GB
        err = a.request("document/replace", {"documentId": doc, "query": "a+", "regex": True, "all": True,
                                             "replacement": "$0" * 200000}, error=True)
        self.assertEqual(err["code"], -32602, err)
        self.assertIn("replacement", err["message"])
        self.assertLess(b.ping_time(), 1.0)
        # 30 KB typed at 10,000 cursors: 300 MB
        a.request("document/setCursors", {"documentId": doc, "cursors": [{"position": at(i % 100, i // 100)}
                                                                          for i in range(10000)]})
        err = a.request("document/type", {"documentId": doc, "text": "t" * 30000}, error=True)
        self.assertEqual(err["code"], -32602, err)
        self.assertIn("cursors", err["message"])
        self.assertEqual(self.content(b, doc), ("a" * 1000 + "\n") * 100)
        self.assertEqual(a.request("document/info", {"documentId": doc})["version"], 1)
        # Enter at 10,000 cursors in a megabyte of blanks: each would copy the line's indent
        blank = self.open(a, self.file("blank.txt", " " * (1 << 20) + "x\n"))
        a.request("document/setCursors", {"documentId": blank, "cursors": [{"position": at(0, (1 << 20) - i)}
                                                                            for i in range(10000)]})
        t = time.monotonic()
        self.assertTrue(a.request("document/newline", {"documentId": blank})["success"])
        self.assertLess(time.monotonic() - t, 10.0)
        self.assertLess(b.ping_time(), 1.0)
        info = a.request("document/info", {"documentId": blank})
        self.assertEqual(info["lineCount"], 10002)
        self.assertEqual(len(a.request("document/line", {"documentId": blank, "lineNumber": 5000})["text"]), 1025)
        self.assertTrue(a.request("document/duplicateLines", {"documentId": blank})["success"])
        # within the bound it is an edit like any other
        got = a.request("document/replace", {"documentId": doc, "query": "a+", "regex": True, "all": True,
                                             "replacement": "<$0>"})
        self.assertEqual(got["replaced"], 100)

    def test_line_commands_at_the_ends_and_graphemes_that_do_not_end(self):
        self.start()
        a = self.connect()
        one = self.open(a, self.file("one.txt", "only"))
        for method, params in (("document/moveLines", {"direction": "up"}), ("document/moveLines", {"direction": "down"})):
            got = a.request(method, dict(params, documentId=one))
            self.assertTrue(got["success"], got)
        self.assertEqual(self.content(a, one), "only")
        err = a.request("document/moveLines", {"documentId": one, "direction": "sideways"}, error=True)
        self.assertEqual(err["code"], -32602)
        self.assertTrue(a.request("document/duplicateLines", {"documentId": one})["success"])
        self.assertEqual(self.content(a, one), "only\nonly")
        a.request("document/setCursor", {"documentId": one, "position": at(1, 4)})
        a.request("document/moveLines", {"documentId": one, "direction": "down"})
        a.request("document/duplicateLines", {"documentId": one})
        self.assertEqual(self.content(a, one), "only\nonly\nonly")
        self.assertEqual(a.request("document/cursors", {"documentId": one})["cursors"][0]["position"], at(2, 4))
        a.request("document/selectAll", {"documentId": one})
        a.request("document/moveLines", {"documentId": one, "direction": "up"})
        a.request("document/moveLines", {"documentId": one, "direction": "down"})
        self.assertEqual(self.content(a, one), "only\nonly\nonly")
        empty = self.open(a, self.file("empty.txt", ""))
        for m in ("document/duplicateLines", "document/indent", "document/outdent", "document/newline"):
            self.assertTrue(a.request(m, {"documentId": empty})["success"], m)
        err = a.request("document/toggleComment", {"documentId": empty}, error=True)
        self.assertEqual(err["code"], -32602)
        unknown = a.request("document/open", {"uri": "untitled:x", "content": "x", "languageId": "no-such-lang"})
        err = a.request("document/toggleComment", {"documentId": unknown["documentId"]}, error=True)
        self.assertEqual(err["code"], -32602)
        # a cursor set inside a 1,000-code-point ZWJ sequence, and invalid bytes
        zwj = "\U0001F468" + "\u200d\U0001F469" * 500
        g = self.open(a, self.file("g.txt", ("x" + zwj + "y\n").encode() + b"\xff\xfe\xc3(\xe2\x82\n"))
        for col in (1, 2, 3, 501, 999, 1500, 1501):
            a.request("document/setCursor", {"documentId": g, "position": at(0, col)})
            c = a.request("document/cursors", {"documentId": g})["cursors"][0]["position"]
            self.assertLessEqual(c["column"], col)
        a.request("document/setCursor", {"documentId": g, "position": at(0, 0)})
        cols = []
        while len(cols) < 100 and (not cols or cols[-1]["line"] == 0):
            a.request("document/moveCursors", {"documentId": g, "direction": "right", "unit": "character"})
            cols.append(a.request("document/cursors", {"documentId": g})["cursors"][0]["position"])
        self.assertEqual(cols[-1]["line"], 1)
        on_first = [p["column"] for p in cols if p["line"] == 0]
        self.assertEqual(on_first, sorted(set(on_first)))
        a.request("document/setCursor", {"documentId": g, "position": at(1, 3)})
        self.assertTrue(a.request("document/deleteWord", {"documentId": g, "direction": "left"})["success"])
        for _ in range(6):
            a.request("document/setCursor", {"documentId": g, "position": at(1, 0)})
            self.assertTrue(a.request("document/deleteWord", {"documentId": g, "direction": "right"})["success"])
        self.assertTrue(self.content(a, g).startswith("x" + zwj + "y"))
        a.request("document/setCursor", {"documentId": g, "position": at(0, 1000)})
        self.assertTrue(a.request("document/deleteWord", {"documentId": g, "direction": "right"})["success"])

    # --- the structure of huge and deep documents --------------------------------

    def test_structure_of_deep_and_huge_documents_leaves_pings_prompt(self):
        self.start()
        a, b = self.connect(), self.connect()
        depth = 100000
        deep = self.open(a, self.file("deep.json", "[" * depth + "]" * depth + "\n"))
        a.request("syntax/foldingRanges", {"documentId": deep})
        positions = [at(0, i * 100) for i in range(1000)]
        t = time.monotonic()
        got = a.request("syntax/selectionRanges", {"documentId": deep, "positions": positions})
        self.assertLess(time.monotonic() - t, 20)
        self.assertEqual(len(got["ranges"]), 1000)
        chain, n = got["ranges"][999], 0
        while chain:
            chain, n = chain.get("parent"), n + 1
        self.assertLessEqual(n, 131)
        err = a.request("syntax/selectionRanges", {"documentId": deep, "positions": positions + [at(0, 0)]}, error=True)
        self.assertEqual(err["code"], -32602)
        err = a.request("syntax/selectionRanges", {"documentId": deep, "positions": [at(5, 0)]}, error=True)
        self.assertEqual(err["code"], -32003)
        for line in (2, 10 ** 9, 2 ** 40):
            err = a.request("syntax/indent", {"documentId": deep, "line": line}, error=True)
            self.assertEqual(err["code"], -32003, (line, err))
        for line in (-1, "x", 1.5):
            err = a.request("syntax/indent", {"documentId": deep, "line": line}, error=True)
            self.assertEqual(err["code"], -32602, (line, err))
        self.assertEqual(a.request("syntax/indent", {"documentId": deep, "line": 1})["indent"], "")
        src = "".join("int f%d(void) { return %d; }\nstruct s%d { int x; };\n" % (i, i, i) for i in range(60000))
        huge = self.open(a, self.file("huge.c", src))
        a.send("syntax/symbols", {"documentId": huge})
        slowest = max(b.ping_time() for _ in range(10))
        self.assertLess(slowest, 1.0)

    # --- a repository that names programs -----------------------------------------

    def test_an_untrusted_repository_starts_no_language_server(self):
        bin_dir = os.path.join(self.tmp, "bin")
        os.makedirs(bin_dir)
        marker = os.path.join(self.tmp, "clangd-ran")
        with open(os.path.join(bin_dir, "clangd"), "w") as f:
            f.write("#!/bin/sh\ntouch '%s'\nexec sleep 30\n" % marker)
        os.chmod(os.path.join(bin_dir, "clangd"), 0o755)
        self.file("compile_commands.json", json.dumps([{"directory": self.ws, "file": "m.c",
                                                        "command": "sh -c 'touch %s.cc' m.c" % marker}]))
        self.file(".clangd", "CompileFlags:\n  Compiler: /bin/sh\n  Add: [-c, 'touch %s.cfg']\n" % marker)
        env = dict(os.environ, PATH=bin_dir + ":/usr/bin:/bin")
        self.start(env)
        a, b = self.connect(), self.connect()
        doc = self.open(a, self.file("m.c", "int main(void) { return 0; }\n"))
        self.open(b, self.file("n.cpp", "int x;\n"))
        a.request("lsp/documentOpen", {"uri": "file://" + self.ws + "/m.c", "languageId": "c", "content": "x"})
        time.sleep(0.5)
        a.request("ecp/ping")
        self.assertFalse([n for n in a.notes if n["method"] == "lsp/serverStatusChanged"], a.notes)
        self.assertFalse(os.path.exists(marker))
        err = a.request("lsp/start", {"languageId": "c"}, error=True)
        self.assertEqual(err["code"], -32410)
        self.assertFalse(os.path.exists(marker))
        self.assertFalse(os.path.exists(marker + ".cc") or os.path.exists(marker + ".cfg"))
        # the same server does start once the folder is trusted: the bait was real
        a.request("workspace/trust", {"uri": self.ws, "trusted": True})
        deadline = time.time() + 10
        while not os.path.exists(marker) and time.time() < deadline:
            time.sleep(0.05)
        self.assertTrue(os.path.exists(marker))
        a.request("workspace/trust", {"uri": self.ws, "trusted": False})
        self.assertIn(doc, self.listed(a))


if __name__ == "__main__":
    ECPD = sys.argv.pop(1)
    unittest.main(verbosity=2)
