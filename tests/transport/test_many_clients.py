#!/usr/bin/env python3
"""Many clients on one server: the real ecpd --socket and several clients.

usage: test_many_clients.py ECPD

A document is open for as long as some client holds it: one client's close
or disconnect never takes it from the others, and unsaved text outlives the
client that typed it. Each client has its own cursors, which every edit moves;
everyone hears who came, who left, whose cursors moved and who saved.
"""
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

ECPD = None


class Server:
    def __init__(self, tmp, workspace):
        self.path = os.path.join(tmp, "run", "ecpd.sock")
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        self.data = os.path.join(tmp, "data")
        self.workspace = workspace
        self.p = subprocess.Popen([ECPD, "--socket", self.path, "--data-dir", self.data, "--workspace", workspace],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.time() + 10
        while True:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.connect(self.path)
                break
            except OSError:
                if time.time() > deadline or self.p.poll() is not None:
                    raise RuntimeError("server did not start: " + self.p.stderr.read().decode())
                time.sleep(0.01)
            finally:
                s.close()

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
        code = self.p.wait(10)
        self.p.stderr.close()
        return code


class Client:
    """One connection; notifications are kept in order as they arrive."""

    def __init__(self, srv, name=None, version=None):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.connect(srv.path)
        self.s.settimeout(20)
        self.f = self.s.makefile("rb")
        self.next_id = 1
        self.notes = []
        params = {}
        if name is not None:
            params["clientInfo"] = {"name": name}
            if version is not None:
                params["clientInfo"]["version"] = version
        self.init = self.request("initialize", params)
        self.id = self.init["clientId"]

    def _message(self):
        line = self.f.readline()
        if not line:
            raise EOFError("connection closed")
        return json.loads(line)

    def request(self, method, params=None, error=False):
        id_ = self.next_id
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": id_, "method": method}
        if params is not None:
            msg["params"] = params
        self.s.sendall((json.dumps(msg) + "\n").encode())
        while True:
            m = self._message()
            if "method" in m and "id" not in m:
                self.notes.append(m)
                continue
            if m.get("id") == id_:
                if error:
                    return m.get("error")
                if "error" in m:
                    raise AssertionError("%s: %s" % (method, m["error"]))
                return m["result"]

    def sync(self):
        """Everything the server sent before now has been read."""
        self.request("ecp/ping")

    def take(self, method):
        """The notifications of method received so far (read, then forgotten)."""
        got = [n["params"] for n in self.notes if n["method"] == method]
        self.notes = [n for n in self.notes if n["method"] != method]
        return got

    def close(self):
        self.f.close()
        self.s.close()


def at(line, column):
    return {"line": line, "column": column}


class ManyClients(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ecpd-many-")
        self.ws = os.path.join(self.tmp, "ws")
        os.makedirs(self.ws)
        self.srv = Server(self.tmp, self.ws)
        self.clients = []

    def tearDown(self):
        for c in self.clients:
            try:
                c.close()
            except OSError:
                pass
        if self.srv:
            self.srv.stop()

    def connect(self, name=None, version=None):
        c = Client(self.srv, name, version)
        self.clients.append(c)
        return c

    def file(self, name, text):
        path = os.path.join(self.ws, name)
        with open(path, "w") as f:
            f.write(text)
        return "file://" + path

    def open(self, c, uri):
        return c.request("document/open", {"uri": uri})["documentId"]

    def content(self, c, doc):
        return c.request("document/content", {"documentId": doc})["content"]

    def listed(self, c):
        return [d["documentId"] for d in c.request("document/list")["documents"]]

    # ----- holds -------------------------------------------------------------------------------

    def test_another_clients_close_leaves_the_document_and_its_unsaved_text(self):
        uri = self.file("a.txt", "hello\n")
        a, b = self.connect("a"), self.connect("b")
        doc = self.open(a, uri)
        a.request("document/insert", {"documentId": doc, "position": at(0, 5), "text": " world"})
        self.assertEqual(self.open(b, uri), doc)
        self.assertEqual(b.request("document/close", {"documentId": doc}), {"success": True})
        a.sync()
        self.assertEqual(a.take("document/didClose"), [])
        self.assertEqual(self.content(a, doc), "hello world\n")
        self.assertIn(doc, self.listed(a))
        # a client that never held it closes nothing either
        c = self.connect("c")
        self.assertEqual(c.request("document/close", {"documentId": doc}), {"success": True})
        self.assertEqual(self.content(a, doc), "hello world\n")
        # the last holder's close closes it, and the others hear of it
        self.assertEqual(a.request("document/close", {"documentId": doc}), {"success": True})
        b.sync()
        self.assertEqual(b.take("document/didClose"), [{"documentId": doc, "uri": uri}])
        self.assertNotIn(doc, self.listed(b))

    def test_five_clients_hold_one_document_until_the_last_lets_go(self):
        uri = self.file("five.txt", "x\n")
        cs = [self.connect("c%d" % i) for i in range(5)]
        docs = {self.open(c, uri) for c in cs}
        self.assertEqual(len(docs), 1)
        doc = docs.pop()
        for c in cs[:4]:
            c.request("document/close", {"documentId": doc})
            self.assertIn(doc, self.listed(cs[4]))
        cs[4].request("document/close", {"documentId": doc})
        for c in cs[:4]:
            c.sync()
            self.assertEqual(c.take("document/didClose"), [{"documentId": doc, "uri": uri}])

    def test_a_disconnect_keeps_the_document_for_the_others(self):
        uri = self.file("d.txt", "one\n")
        a, b = self.connect("a"), self.connect("b")
        doc = self.open(a, uri)
        self.open(b, uri)
        # b's edit, saved: the document is clean when b goes, and a still holds it
        b.request("document/insert", {"documentId": doc, "position": at(0, 0), "text": "B"})
        self.assertTrue(b.request("document/save", {"documentId": doc})["success"])
        b.close()
        self.clients.remove(b)
        time.sleep(0.2)
        self.assertEqual(self.content(a, doc), "Bone\n")
        self.assertIn(doc, self.listed(a))
        a.sync()
        self.assertEqual(a.take("document/didClose"), [])

    def test_a_killed_client_process_keeps_the_document_for_the_others(self):
        uri = self.file("k.txt", "one\n")
        a = self.connect("a")
        doc = self.open(a, uri)
        code = ("import json,socket,sys,time\n"
                "s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])\n"
                "s.sendall((json.dumps({'jsonrpc':'2.0','id':1,'method':'document/open','params':{'uri':sys.argv[2]}})"
                "+'\\n').encode())\n"
                "f=s.makefile('rb')\n"
                "while 'id' not in json.loads(f.readline()): pass\n"
                "print('held', flush=True); time.sleep(60)\n")
        child = subprocess.Popen([sys.executable, "-c", code, self.srv.path, uri], stdout=subprocess.PIPE)
        self.assertEqual(child.stdout.readline().strip(), b"held")
        self.assertEqual(len(a.request("document/clients", {"documentId": doc})["clients"]), 2)
        child.kill()
        child.wait()
        child.stdout.close()
        deadline = time.time() + 10
        while len(a.request("document/clients", {"documentId": doc})["clients"]) != 1:
            self.assertLess(time.time(), deadline)
            time.sleep(0.05)
        self.assertEqual(self.content(a, doc), "one\n")
        a.sync()
        self.assertEqual(a.take("document/didClose"), [])

    def test_unsaved_text_whose_only_holder_left_survives_a_restart(self):
        uri = self.file("u.txt", "base\n")
        a, b = self.connect("a"), self.connect("b")
        doc = self.open(a, uri)
        a.request("document/insert", {"documentId": doc, "position": at(1, 0), "text": "unsaved\n"})
        a.close()
        self.clients.remove(a)
        time.sleep(0.2)
        docs = b.request("document/list")["documents"]
        self.assertEqual([(d["documentId"], d["isDirty"]) for d in docs], [(doc, True)])
        time.sleep(1.2)  # the journal writes within a second
        b.close()
        self.clients.remove(b)
        self.srv.stop()
        self.srv = Server(self.tmp, self.ws)
        c = self.connect("c")
        listed = c.request("session/recoverable")["documents"]
        self.assertEqual([d["uri"] for d in listed], [uri])
        back = c.request("session/recover", {"uris": [uri]})["documents"][0]["documentId"]
        self.assertEqual(self.content(c, back), "base\nunsaved\n")
        # the client that recovered it holds it: another's open and close leave it open
        d = self.connect("d")
        self.assertEqual(self.open(d, uri), back)
        d.request("document/close", {"documentId": back})
        self.assertEqual(self.content(c, back), "base\nunsaved\n")
        self.assertEqual([x["clientId"] for x in c.request("document/clients", {"documentId": back})["clients"]],
                         [c.id])

    def test_a_clean_document_nobody_holds_closes_and_a_dirty_one_closes_by_id(self):
        clean, dirty = self.file("c.txt", "c\n"), self.file("d.txt", "d\n")
        a, b = self.connect("a"), self.connect("b")
        dc, dd = self.open(a, clean), self.open(a, dirty)
        a.request("document/insert", {"documentId": dd, "position": at(0, 0), "text": "!"})
        a.close()
        self.clients.remove(a)
        time.sleep(0.2)
        b.sync()
        self.assertEqual(b.take("document/didClose"), [{"documentId": dc, "uri": clean}])
        self.assertEqual(self.listed(b), [dd])
        # nobody holds it: any client's close closes it
        self.assertEqual(b.request("document/close", {"documentId": dd}), {"success": True})
        self.assertEqual(self.listed(b), [])

    # ----- cursors -------------------------------------------------------------------------------

    def test_each_client_types_at_its_own_cursor(self):
        uri = self.file("t.txt", "first\nsecond\n")
        a, b = self.connect("a"), self.connect("b")
        doc = self.open(a, uri)
        self.open(b, uri)
        a.request("document/setCursor", {"documentId": doc, "position": at(1, 6)})
        b.request("document/setCursor", {"documentId": doc, "position": at(0, 0)})
        # b types above a: a's cursor moves down with its text
        b.request("document/type", {"documentId": doc, "text": "B1\n"})
        self.assertEqual(a.request("document/cursors", {"documentId": doc})["cursors"], [{"position": at(2, 6)}])
        a.request("document/type", {"documentId": doc, "text": " A"})
        b.request("document/type", {"documentId": doc, "text": "B2"})
        a.request("document/type", {"documentId": doc, "text": "!"})
        self.assertEqual(self.content(a, doc), "B1\nB2first\nsecond A!\n")
        self.assertEqual(b.request("document/cursors", {"documentId": doc})["cursors"], [{"position": at(1, 2)}])
        self.assertEqual(a.request("document/cursors", {"documentId": doc})["cursors"], [{"position": at(2, 9)}])
        # a's edit on b's line, before b's cursor, moves b's cursor along it
        a.request("document/insert", {"documentId": doc, "position": at(1, 0), "text": ">>"})
        self.assertEqual(b.request("document/cursors", {"documentId": doc})["cursors"], [{"position": at(1, 4)}])
        self.assertEqual(a.request("document/cursors", {"documentId": doc})["cursors"], [{"position": at(1, 2)}])

    def test_five_clients_typing_in_turn_at_five_places(self):
        uri = self.file("f.txt", "".join("line%d\n" % i for i in range(5)))
        cs = [self.connect("c%d" % i) for i in range(5)]
        doc = self.open(cs[0], uri)
        for i, c in enumerate(cs):
            self.open(c, uri)
            c.request("document/setCursor", {"documentId": doc, "position": at(i, 5)})
        # in turns: each line break pushes every client below it down a line
        for step in ("a%d", "\n", "b%d"):
            for i, c in enumerate(cs):
                c.request("document/type", {"documentId": doc, "text": step.replace("%d", str(i))})
        self.assertEqual(self.content(cs[0], doc), "".join("line%da%d\nb%d\n" % (i, i, i) for i in range(5)))
        for i, c in enumerate(cs):
            self.assertEqual(c.request("document/cursors", {"documentId": doc})["cursors"],
                             [{"position": at(2 * i + 1, 2)}], "client %d" % i)

    def test_undo_restores_the_callers_cursors_and_cursor_notes_carry_the_client(self):
        uri = self.file("u.txt", "abc\ndef\n")
        a, b = self.connect("a"), self.connect("b")
        doc = self.open(a, uri)
        self.open(b, uri)
        a.request("document/setCursor", {"documentId": doc, "position": at(1, 3)})
        b.sync()
        notes = b.take("document/didChangeCursors")
        self.assertEqual(notes, [{"documentId": doc, "clientId": a.id, "cursors": [{"position": at(1, 3)}]}])
        a.sync()
        self.assertEqual(a.take("document/didChangeCursors"), notes)  # to every connection, the mover too
        b.request("document/setCursor", {"documentId": doc, "position": at(0, 1)})
        a.request("document/type", {"documentId": doc, "text": "XYZ"})
        a.request("document/setCursor", {"documentId": doc, "position": at(0, 0)})
        b.request("document/setCursor", {"documentId": doc, "position": at(0, 2)})
        a.request("document/undo", {"documentId": doc})
        self.assertEqual(self.content(a, doc), "abc\ndef\n")
        # a's cursors are where a had them before its step; b's stay b's
        self.assertEqual(a.request("document/cursors", {"documentId": doc})["cursors"], [{"position": at(1, 3)}])
        self.assertEqual(b.request("document/cursors", {"documentId": doc})["cursors"], [{"position": at(0, 2)}])
        a.request("document/redo", {"documentId": doc})
        self.assertEqual(a.request("document/cursors", {"documentId": doc})["cursors"], [{"position": at(1, 6)}])

    # ----- saves, presence, identity ------------------------------------------------------------

    def test_a_save_is_heard_by_everyone_and_cleans_the_document_for_all(self):
        uri = self.file("s.txt", "s\n")
        a, b = self.connect("a"), self.connect("b")
        doc = self.open(a, uri)
        self.open(b, uri)
        a.request("document/insert", {"documentId": doc, "position": at(0, 0), "text": "1"})
        b.request("document/insert", {"documentId": doc, "position": at(0, 0), "text": "2"})
        self.assertTrue(b.request("document/info", {"documentId": doc})["isDirty"])
        saved = a.request("document/save", {"documentId": doc})
        self.assertTrue(saved["success"])
        self.assertEqual(saved["version"], 3)
        b.sync()
        self.assertEqual(b.take("document/didSave"), [{"documentId": doc, "uri": uri, "version": 3}])
        self.assertFalse(b.request("document/info", {"documentId": doc})["isDirty"])
        a.sync()
        self.assertEqual(a.take("document/didSave"), [{"documentId": doc, "uri": uri, "version": 3}])
        # save as: the new uri
        other = "file://" + os.path.join(self.ws, "s2.txt")
        b.request("document/save", {"documentId": doc, "uri": other})
        a.sync()
        self.assertEqual(a.take("document/didSave"), [{"documentId": doc, "uri": other, "version": 3}])

    def test_every_client_learns_the_folder_it_shares(self):
        real = os.path.realpath(self.ws)
        a = self.connect("alpha")
        self.assertEqual((a.init["workspaceRoot"], a.init["workspaceUri"]), (real, "file://" + real))
        # a client naming another folder still shares the server's
        self.assertEqual(a.request("initialize", {"workspaceRoot": self.tmp})["workspaceRoot"], real)

    def test_presence_and_identity(self):
        a = self.connect("alpha", "1.2")
        self.assertEqual(a.request("ecp/whoami"), {"clientId": a.id, "name": "alpha 1.2"})
        b = self.connect("beta")
        self.assertNotEqual(a.id, b.id)
        self.assertEqual(b.request("ecp/whoami"), {"clientId": b.id, "name": "beta"})
        a.sync()
        self.assertEqual(a.take("client/didConnect"), [{"clientId": b.id, "name": "beta"}])
        self.assertEqual(b.take("client/didConnect"), [])  # not its own
        uri = self.file("p.txt", "p\nq\n")
        doc = self.open(a, uri)
        self.open(b, uri)
        b.request("document/setCursor", {"documentId": doc, "position": at(1, 1)})
        self.assertEqual(b.request("document/clients", {"documentId": doc}), {"clients": [
            {"clientId": a.id, "name": "alpha 1.2", "cursors": [{"position": at(0, 0)}]},
            {"clientId": b.id, "name": "beta", "cursors": [{"position": at(1, 1)}]},
        ]})
        nameless = self.connect()
        self.assertEqual(nameless.request("ecp/whoami"), {"clientId": nameless.id, "name": ""})
        # cut to 256 bytes, never inside a character: byte 256 would split an e-acute
        long_name = self.connect("a" + "\u00e9" * 300)
        self.assertEqual(long_name.request("ecp/whoami")["name"], "a" + "\u00e9" * 127)
        bad = a.request("document/clients", {"documentId": "nope"}, error=True)
        self.assertEqual(bad["code"], -32001)
        b.close()
        self.clients.remove(b)
        deadline = time.time() + 10
        while not [n for n in a.notes if n["method"] == "client/didDisconnect"]:
            self.assertLess(time.time(), deadline)
            a.sync()
        self.assertEqual(a.take("client/didDisconnect"), [{"clientId": b.id, "name": "beta"}])
        self.assertEqual([c["clientId"] for c in a.request("document/clients", {"documentId": doc})["clients"]],
                         [a.id])


if __name__ == "__main__":
    ECPD = os.path.abspath(sys.argv.pop(1))
    unittest.main()
