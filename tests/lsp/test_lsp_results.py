"""What language servers answer, as clients get it, through the real ecpd binary.

usage: test_lsp_results.py ECPD

A server's answer is read once and quoted as it came when nothing in it has to
change: so an answer with line breaks between its tokens, or invalid UTF-8 in a
string, must still reach a client as one valid message; big answers keep their
every item; and diagnostics, kept as structs, keep every member they were
published with, positions converted to the client's units.
"""
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

ECPD = None
HERE = os.path.dirname(os.path.abspath(__file__))
FAKE = os.path.join(HERE, "fake_server.py")


class Ecpd:
    def __init__(self, workspace, data):
        self.p = subprocess.Popen([ECPD, "--stdio", "--workspace", workspace, "--data-dir", data],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.next_id = 1
        self.notes = []

    def request(self, method, params):
        i = self.next_id
        self.next_id += 1
        self.p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n").encode())
        self.p.stdin.flush()
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise AssertionError("ecpd closed its output")
            msg = json.loads(line)  # every line must be one whole message
            if msg.get("id") == i:
                return msg
            self.notes.append(msg)

    def call(self, method, params):
        msg = self.request(method, params)
        if "error" in msg:
            raise AssertionError("%s: %s" % (method, msg["error"]))
        return msg["result"]

    def close(self):
        self.p.stdin.close()
        self.p.wait(10)


class Results(unittest.TestCase):
    def start(self, mode, encodings=("utf-16",)):
        ws = os.path.realpath(tempfile.mkdtemp(prefix="ecpd-lsp-results-"))
        s = Ecpd(ws, tempfile.mkdtemp(prefix="ecpd-lsp-results-data-"))
        self.addCleanup(s.close)
        s.call("initialize", {"clientInfo": {"name": "test"}, "capabilities": {"positionEncodings": list(encodings)}})
        s.call("workspace/trust", {"uri": "file://" + ws, "trusted": True})
        s.call("lsp/setServerConfig", {"languageId": "fake", "config": {"command": sys.executable, "args": [FAKE, mode]}})
        uri = "file://" + ws + "/a.fake"
        s.call("lsp/documentOpen", {"uri": uri, "languageId": "fake", "content": "a\u20acb c\n"})
        s.call("lsp/start", {"languageId": "fake"})
        return s, uri

    def test_a_pretty_printed_answer_with_invalid_utf8_is_one_valid_message(self):
        s, uri = self.start("pretty", ("utf-8",))  # the server's own units: nothing to convert
        hover = s.call("lsp/hover", {"uri": uri, "position": {"line": 0, "character": 0}})
        self.assertEqual(hover, {"contents": "caf\ufffd"})
        signature = s.call("lsp/signatureHelp", {"uri": uri, "position": {"line": 0, "character": 0}})
        self.assertEqual(signature, {"contents": "caf\ufffd"})
        self.assertEqual(s.call("ecp/ping", {}), s.call("ecp/ping", {}))  # still in step

    def test_diagnostics_keep_every_member_in_the_clients_units(self):
        s, uri = self.start("pretty", ("utf-16",))
        deadline = time.time() + 10
        diags = []
        while not diags and time.time() < deadline:
            diags = s.call("lsp/diagnostics", {"uri": uri})["diagnostics"]
            time.sleep(0.05)
        # bytes 4 and 6 of "a\u20acb c" are UTF-16 units 2 and 4
        rng = {"start": {"line": 0, "character": 2}, "end": {"line": 0, "character": 4}}
        self.assertEqual(diags, [
            {"range": rng, "severity": 1, "code": "E1", "source": "fake", "message": "bad \ufffd byte",
             "tags": [1], "data": {"any": [1, 2]}, "codeDescription": {"href": "https://x.invalid/E1"},
             "relatedInformation": [{"location": {"uri": uri, "range": rng}, "message": "there"}]},
            {"range": rng, "message": "no severity", "code": 7},
            42])
        published = [n for n in s.notes if n.get("method") == "lsp/didPublishDiagnostics"]
        self.assertEqual(published[-1]["params"], {"uri": uri, "diagnostics": diags})
        self.assertEqual(s.call("lsp/diagnosticsSummary", {}), {"errors": 1, "warnings": 0})
        view = s.call("lsp/allDiagnostics", {})["diagnostics"]
        self.assertEqual(view, {uri: diags})

    def test_big_answers_keep_every_item(self):
        s, uri = self.start("big")
        pos = {"uri": uri, "position": {"line": 0, "character": 0}}
        items = s.call("lsp/completion", pos)["items"]
        self.assertEqual(len(items), 100000)
        self.assertEqual(items[99999]["label"], "item99999")
        rng = lambda line, ch: {"start": {"line": line, "character": ch}, "end": {"line": line, "character": ch + 3}}
        locations = s.call("lsp/references", dict(pos, includeDeclaration=True))["locations"]
        self.assertEqual(len(locations), 50000)
        self.assertEqual(locations[7], {"uri": uri, "range": rng(1, 2)})
        links = s.call("lsp/references", dict(pos, includeDeclaration=False))["locations"]
        self.assertEqual(len(links), 50000)
        self.assertEqual(links[7], {"uri": uri, "range": rng(1, 2)})  # targetSelectionRange


if __name__ == "__main__":
    ECPD = sys.argv.pop(1)
    unittest.main()
