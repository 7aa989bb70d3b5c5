"""A language server that misbehaves on purpose, for the lsp service's fault tests.

Usage: fake_server.py MODE [LOG]
  LOG             a file every message read is appended to, one JSON text per line;
                  it starts with {"env": value} when ECPD_FAKE_ENV is set
  normal          answers initialize; hover answers after it has asked the client
                  something: workspace/applyEdit on the document (inserting "// ok\n"
                  at its start), an unknown request, workspace/configuration,
                  client/registerCapability, window/workDoneProgress/create,
                  window/showMessageRequest; it also sends window/showMessage and
                  $/progress. The hover's contents say what the client answered.
                  Formatting is answered MethodNotFound.
  garbage         answers initialize, then writes bytes that are not LSP on the first request
  exit-on-init    exits with code 3 when asked to initialize
  asks-first      asks workspace/configuration before it answers initialize, and
                  answers initialize only once the client has answered that
  silent          answers initialize, never answers anything else; each $/cancelRequest
                  it gets is told back as window/showMessage "cancelled <id>"
  mute            answers nothing, not even initialize
  diagnostics     publishes two diagnostics (lines 0 and 5) for every document opened
  crash           exits with code 9 on any request after initialize
  huge            answers hover with a message larger than the client accepts, then
                  answers the next hover normally
  utf8            counts columns in UTF-8 bytes; answers every request with its own
                  params
  fullsync        asks for whole-text didChange; answers every request with null
  pretty          counts columns in UTF-8 bytes; publishes, for every document opened,
                  diagnostics with every kind of member (relatedInformation with
                  positions, code, tags, data, a message in invalid UTF-8, an element
                  that is not an object); answers hover with pretty-printed JSON (line
                  breaks between tokens) whose string holds invalid UTF-8, and
                  signatureHelp with the same on one line
  big             answers completion with 100,000 items and references with 50,000
                  locations (LocationLink when the context's includeDeclaration is
                  false), others with null
"""
import json
import os
import sys

mode = sys.argv[1]
log = open(sys.argv[2], "a") if len(sys.argv) > 2 else None
inp = sys.stdin.buffer
out = sys.stdout.buffer
if log and "ECPD_FAKE_ENV" in os.environ:
    log.write(json.dumps({"env": os.environ["ECPD_FAKE_ENV"]}) + "\n")
    log.flush()


def read():
    length = None
    while True:
        line = inp.readline()
        if not line:
            sys.exit(0)
        line = line.strip()
        if not line:
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    body = inp.read(length)
    if log:
        log.write(body.decode() + "\n")
        log.flush()
    return json.loads(body)


def write(msg):
    body = json.dumps(msg).encode()
    out.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    out.flush()


def answer_of(req_id):
    while True:
        msg = read()
        if msg.get("id") == req_id and "method" not in msg:
            return msg


def big_answer(method, params):
    def rng(line, character):
        return {"start": {"line": line, "character": character}, "end": {"line": line, "character": character + 3}}
    uri = params["textDocument"]["uri"]
    if method == "textDocument/completion":
        return {"isIncomplete": False,
                "items": [{"label": "item%d" % i, "kind": 6, "detail": "int item%d" % i,
                           "textEdit": {"range": rng(0, 0), "newText": "item%d" % i}} for i in range(100000)]}
    if method == "textDocument/references":
        if params.get("context", {}).get("includeDeclaration", True):
            return [{"uri": uri, "range": rng(i % 3, i % 5)} for i in range(50000)]
        return [{"targetUri": uri, "targetRange": rng(i % 3, 0), "targetSelectionRange": rng(i % 3, i % 5),
                 "originSelectionRange": rng(0, 0)} for i in range(50000)]
    return None


huge_sent = False
next_id = 1000
while True:
    msg = read()
    method = msg.get("method")
    if mode == "mute":
        continue
    if method == "initialize":
        if mode == "exit-on-init":
            sys.exit(3)
        if mode == "asks-first":
            next_id += 1
            write({"jsonrpc": "2.0", "id": next_id, "method": "workspace/configuration",
                   "params": {"items": [{"section": "fake.answer"}]}})
            answer_of(next_id)
        capabilities = {"textDocumentSync": 1 if mode == "fullsync" else 2, "hoverProvider": True}
        if mode in ("utf8", "pretty"):
            capabilities["positionEncoding"] = "utf-8"
        write({"jsonrpc": "2.0", "id": msg["id"], "result": {"capabilities": capabilities}})
    elif method == "textDocument/didOpen" and mode == "diagnostics":
        def diag(line, severity, message):
            return {"range": {"start": {"line": line, "character": 1}, "end": {"line": line, "character": 4}},
                    "severity": severity, "source": "fake", "message": message}
        write({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics",
               "params": {"uri": msg["params"]["textDocument"]["uri"],
                          "diagnostics": [diag(0, 1, "first"), diag(5, 2, "second")]}})
    elif method == "textDocument/didOpen" and mode == "pretty":
        uri = msg["params"]["textDocument"]["uri"]
        rng = {"start": {"line": 0, "character": 4}, "end": {"line": 0, "character": 6}}
        diags = [{"range": rng, "severity": 1, "code": "E1", "source": "fake", "message": "MSG",
                  "tags": [1], "data": {"any": [1, 2]}, "codeDescription": {"href": "https://x.invalid/E1"},
                  "relatedInformation": [{"location": {"uri": uri, "range": rng}, "message": "there"}]},
                 {"range": rng, "message": "no severity", "code": 7},
                 42]
        body = json.dumps({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics",
                           "params": {"uri": uri, "diagnostics": diags}}).encode().replace(b"MSG", b"bad \xff byte")
        out.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        out.flush()
    elif method == "$/cancelRequest" and mode == "silent":
        write({"jsonrpc": "2.0", "method": "window/showMessage",
               "params": {"type": 3, "message": "cancelled %d" % msg["params"]["id"]}})
    elif method == "exit":
        sys.exit(0)
    elif method == "shutdown":
        write({"jsonrpc": "2.0", "id": msg["id"], "result": None})
    elif "id" in msg and method is not None:
        if mode == "garbage":
            out.write(b"this is not a header\r\n\r\n{}")
            out.flush()
            continue
        if mode == "silent":
            continue
        if mode == "crash":
            sys.exit(9)
        if mode == "pretty":
            # signatureHelp: on one line, but not UTF-8
            body = json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {"contents": "CAFE"}},
                              indent=None if method == "textDocument/signatureHelp" else 1)
            body = body.encode().replace(b"CAFE", b"caf\xff")
            out.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            out.flush()
            continue
        if mode == "big":
            write({"jsonrpc": "2.0", "id": msg["id"], "result": big_answer(method, msg["params"])})
            continue
        if mode in ("utf8", "fullsync"):
            write({"jsonrpc": "2.0", "id": msg["id"], "result": msg["params"] if mode == "utf8" else None})
            continue
        if mode == "huge" and not huge_sent:
            huge_sent = True
            write({"jsonrpc": "2.0", "id": msg["id"], "result": {"contents": "x" * (65 << 20)}})
            continue
        if mode == "normal" and method == "textDocument/formatting":
            write({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "no formatter"}})
            continue
        said = []
        if mode == "normal":
            uri = msg["params"]["textDocument"]["uri"]
            next_id += 1
            write({"jsonrpc": "2.0", "id": next_id, "method": "workspace/applyEdit",
                   "params": {"edit": {"changes": {uri: [{"range": {"start": {"line": 0, "character": 0},
                                                                     "end": {"line": 0, "character": 0}},
                                                           "newText": "// ok\n"}]}}}})
            said.append(answer_of(next_id).get("result"))
            next_id += 1
            write({"jsonrpc": "2.0", "id": next_id, "method": "x/unknownRequest", "params": {}})
            said.append(answer_of(next_id).get("error", {}).get("code"))
            next_id += 1
            write({"jsonrpc": "2.0", "id": next_id, "method": "workspace/configuration",
                   "params": {"items": [{"section": "fake.answer"}, {"section": "missing"},
                                        {"section": "editor.tabSize"}]}})
            said.append(answer_of(next_id).get("result"))
            asks = (("client/registerCapability", {}), ("window/workDoneProgress/create", {"token": "t1"}),
                    ("window/showMessageRequest", {"type": 2, "message": "choose", "actions": [{"title": "A"}]}))
            for asked, params in asks:
                next_id += 1
                write({"jsonrpc": "2.0", "id": next_id, "method": asked, "params": params})
                answer = answer_of(next_id)
                said.append("result" in answer and answer["result"] is None)
            write({"jsonrpc": "2.0", "method": "window/showMessage", "params": {"type": 3, "message": "hello"}})
            write({"jsonrpc": "2.0", "method": "$/progress", "params": {"token": "t1", "value": {"kind": "begin"}}})
        write({"jsonrpc": "2.0", "id": msg["id"], "result": {"contents": json.dumps(said)}})
