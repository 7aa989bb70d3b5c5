#!/usr/bin/env python3
"""The agent against a scripted LLM server: the real ecpd binary over pipes.

usage: test_agent.py ECPD

Streaming text from both wire APIs, tool calls and every tool, approval and
rejection, confinement (.., absolute paths, symlinks), cancel mid-stream,
model failures (401, 429, 500, malformed and cut streams, unknown tools,
arguments that are not JSON), persistence across a restart, and `ecpd --eca`
driven by an ECA client with Content-Length framing.
"""
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mock_llm import MockLLM  # noqa: E402

ECPD = None
PROVIDER_VARS = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OLLAMA_HOST",
                 "ECPD_MODEL")


class Client:
    """ecpd on pipes, Content-Length framing (what an ECA client speaks)."""

    def __init__(self, data_dir, workspace, env, args=(), cwd=None, wrapper=()):
        cmd = list(wrapper) + [ECPD] + list(args) + ["--data-dir", data_dir]
        if workspace:
            cmd += ["--workspace", workspace]
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  env=env, cwd=cwd)
        self.next_id = 1
        self.responses = {}
        self.notes = queue.Queue()
        self.lock = threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.stderr = b""
        self.stderr_reader = threading.Thread(target=self._drain_stderr, daemon=True)
        self.stderr_reader.start()

    def _drain_stderr(self):
        self.stderr = self.p.stderr.read()

    def _read(self):
        f = self.p.stdout
        while True:
            length = None
            while True:
                line = f.readline()
                if not line:
                    with self.lock:
                        self.lock.notify_all()
                    return
                line = line.strip()
                if not line:
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            msg = json.loads(f.read(length))
            if "id" in msg and "method" not in msg:
                with self.lock:
                    self.responses[msg["id"]] = msg
                    self.lock.notify_all()
            else:
                self.notes.put((time.monotonic(), msg))

    def write(self, msg):
        data = json.dumps(msg).encode()
        self.p.stdin.write(b"Content-Length: %d\r\n\r\n" % len(data) + data)
        self.p.stdin.flush()

    def request(self, method, params=None, timeout=10):
        i = self.next_id
        self.next_id += 1
        self.write({"jsonrpc": "2.0", "id": i, "method": method, "params": params or {}})
        deadline = time.time() + timeout
        with self.lock:
            while i not in self.responses:
                left = deadline - time.time()
                if left <= 0:
                    raise TimeoutError("no answer to " + method)
                self.lock.wait(left)
            return self.responses.pop(i)

    def call(self, method, params=None, timeout=10):
        r = self.request(method, params, timeout)
        if "error" in r:
            raise AssertionError("%s failed: %s" % (method, r["error"]))
        return r["result"]

    def notify(self, method, params):
        self.write({"jsonrpc": "2.0", "method": method, "params": params})

    def content(self, timeout=10):
        """The next chat/contentReceived params."""
        deadline = time.time() + timeout
        while True:
            left = deadline - time.time()
            if left <= 0:
                raise TimeoutError("no chat/contentReceived")
            _, msg = self.notes.get(timeout=left)
            if msg.get("method") == "chat/contentReceived":
                return msg["params"]

    def note(self, method, pred=lambda p: True, timeout=10):
        """The params of the next `method` notification for which pred holds (others are dropped)."""
        deadline = time.time() + timeout
        while True:
            left = deadline - time.time()
            if left <= 0:
                raise TimeoutError("no " + method)
            _, msg = self.notes.get(timeout=left)
            if msg.get("method") == method and pred(msg["params"]):
                return msg["params"]

    def until(self, pred, timeout=10):
        """Contents up to and including the first for which pred holds."""
        seen = []
        while True:
            c = self.content(timeout)
            seen.append(c)
            if pred(c):
                return seen

    def turn(self, timeout=10):
        """Contents up to the end of the turn (progress finished)."""
        return self.until(lambda c: c["content"]["type"] == "progress" and c["content"]["state"] == "finished",
                          timeout)

    def close(self):
        try:
            self.request("shutdown", timeout=5)
            self.notify("exit", {})
        except Exception:
            pass
        try:
            self.p.stdin.close()
        except Exception:
            pass
        try:
            self.p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        self.reader.join(5)
        self.stderr_reader.join(5)
        self.p.stdout.close()
        self.p.stderr.close()
        if b"Sanitizer" in self.stderr or b"runtime error:" in self.stderr or self.p.returncode != 0:
            raise AssertionError("ecpd ended with %s:\n%s" % (self.p.returncode, self.stderr.decode(errors="replace")))


def texts(contents, role="assistant"):
    return [c["content"]["text"] for c in contents if c["content"]["type"] == "text" and c["role"] == role]


def of_type(contents, kind):
    return [c["content"] for c in contents if c["content"]["type"] == kind]


class Base(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ecpd-agent-")
        self.ws = os.path.join(self.tmp, "ws")
        os.makedirs(os.path.join(self.ws, "src"))
        with open(os.path.join(self.ws, "src", "a.txt"), "w") as f:
            f.write("alpha\nbeta\ngamma\n")
        with open(os.path.join(self.tmp, "secret.txt"), "w") as f:
            f.write("outside\n")
        self.data = os.path.join(self.tmp, "data")
        self.mock = MockLLM()
        self.clients = []

    def tearDown(self):
        for c in self.clients:
            c.close()
        self.mock.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def env(self, api="openai", **extra):
        env = {k: v for k, v in os.environ.items() if k not in PROVIDER_VARS}
        if api == "openai":
            env.update(OPENAI_API_KEY="sk-test", OPENAI_BASE_URL="http://127.0.0.1:%d/v1" % self.mock.port)
        elif api == "anthropic":
            env.update(ANTHROPIC_API_KEY="ak-test", ANTHROPIC_BASE_URL="http://127.0.0.1:%d" % self.mock.port,
                       ECPD_MODEL="anthropic/claude-test")
        env.update(extra)
        return env

    def start(self, api="openai", args=(), workspace=True, wrapper=(), **extra):
        c = Client(self.data, self.ws if workspace else None, self.env(api, **extra), args, wrapper=wrapper)
        self.clients.append(c)
        c.call("initialize", {"processId": os.getpid(), "workspaceFolders": [{"uri": "file://" + self.ws,
                                                                              "name": "ws"}]})
        return c

    def stop(self, c):
        self.clients.remove(c)
        c.close()

    def prompt(self, c, message, chat_id=None):
        params = {"message": message}
        if chat_id:
            params["chatId"] = chat_id
        r = c.call("chat/prompt", params)
        self.assertEqual(r["status"], "prompting")
        return r["chatId"]

    def tool_reply(self, name, args, call_id="call_1", split=True):
        text = json.dumps(args)
        frags = [text[:5], text[5:]] if split else [text]
        return {"tools": [{"id": call_id, "name": name, "arguments": frags}]}

    def last_tool_message(self, request_index=-1):
        msgs = self.mock.requests[request_index]["body"]["messages"]
        return [m for m in msgs if m["role"] == "tool"][-1]



class AgentTest(Base):
    """The chat methods on the ordinary server."""

    # ----- providers ---------------------------------------------------------------------------

    def test_no_provider_is_a_clear_error_and_no_request(self):
        c = Client(self.data, self.ws, self.env(api=None), ())
        self.clients.append(c)
        c.call("initialize", {})
        r = c.request("chat/prompt", {"message": "hi"})
        self.assertEqual(r["error"]["code"], -32603)
        for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OLLAMA_HOST"):
            self.assertIn(var, r["error"]["message"])
        self.assertEqual(self.mock.requests, [])
        c.call("ecp/ping", {})  # the rest of the server is unaffected

    def test_api_keys_may_come_from_the_secret_store(self):
        self.mock.add({"text": ["a"]}, {"text": ["b"]})
        c = self.start(api=None, ANTHROPIC_BASE_URL="http://127.0.0.1:%d" % self.mock.port,
                       ECPD_MODEL="anthropic/claude-test")
        r = c.request("chat/prompt", {"message": "x"})
        self.assertEqual(r["error"]["code"], -32603)
        self.assertIn("ANTHROPIC_API_KEY", r["error"]["message"])
        self.assertEqual(self.mock.requests, [])
        c.call("secret/set", {"key": "ANTHROPIC_API_KEY", "value": "from-the-store"})
        chat = self.prompt(c, "x")
        self.assertEqual(texts(c.turn()), ["a"])
        self.assertEqual(self.mock.requests[0]["headers"]["x-api-key"], "from-the-store")
        self.stop(c)
        # without a model, the first provider with a stored key
        c = self.start(api=None, OPENAI_BASE_URL="http://127.0.0.1:%d/v1" % self.mock.port)
        c.call("secret/set", {"key": "OPENAI_API_KEY", "value": "sk-stored"})
        r = c.call("chat/prompt", {"message": "y"})
        self.assertEqual(r["model"], "openai/gpt-4.1")
        c.turn()
        self.assertEqual(self.mock.requests[1]["headers"]["Authorization"], "Bearer sk-stored")
        self.assertNotEqual(r["chatId"], chat)

    def test_openai_text_streams_exactly_in_one_request(self):
        self.mock.add({"text": ["Hel", "lo, ", "wörld"]})
        c = self.start()
        chat = self.prompt(c, "say hello")
        turn = c.turn()
        self.assertEqual(texts(turn), ["Hel", "lo, ", "wörld"])
        self.assertTrue(all(x["chatId"] == chat for x in turn))
        self.assertEqual(of_type(turn, "usage")[0]["sessionTokens"], 15)
        self.assertEqual(len(self.mock.requests), 1)
        req = self.mock.requests[0]
        self.assertEqual(req["path"], "/v1/chat/completions")
        self.assertEqual(req["headers"]["Authorization"], "Bearer sk-test")
        self.assertEqual(req["body"]["model"], "gpt-4.1")
        self.assertTrue(req["body"]["stream"])
        names = {t["function"]["name"] for t in req["body"]["tools"]}
        self.assertTrue({"read_file", "write_file", "edit_file", "list_directory", "grep",
                         "shell_command"} <= names)
        for t in req["body"]["tools"]:
            self.assertEqual(t["function"]["parameters"]["type"], "object")
        self.assertEqual(req["body"]["messages"][-1], {"role": "user", "content": "say hello"})

    def test_model_flag_and_env_choose_the_model(self):
        self.mock.add({"text": ["a"]}, {"text": ["b"]})
        c = self.start(ECPD_MODEL="openai/from-env")
        self.prompt(c, "x")
        c.turn()
        self.assertEqual(self.mock.requests[0]["body"]["model"], "from-env")
        self.stop(c)
        c = self.start(args=("--model", "openai/from-flag"), ECPD_MODEL="openai/from-env")
        r = c.call("chat/prompt", {"message": "y"})
        self.assertEqual(r["model"], "openai/from-flag")
        c.turn()
        self.assertEqual(self.mock.requests[1]["body"]["model"], "from-flag")
        bad = c.request("chat/prompt", {"message": "z", "model": "nope"})
        self.assertEqual(bad["error"]["code"], -32602)

    def test_anthropic_text_and_tool_use(self):
        self.mock.add({"text": ["Let me ", "look"], "tools": [{"id": "toolu_1", "name": "read_file",
                                                                 "arguments": ["{\"path\": ", "\"src/a.txt\"}"]}]},
                      {"text": ["It says alpha"]})
        c = self.start(api="anthropic")
        self.prompt(c, "read a.txt")
        turn = c.turn()
        self.assertEqual(texts(turn), ["Let me ", "look", "It says alpha"])
        prep = of_type(turn, "toolCallPrepare")
        self.assertEqual("".join(p["argumentsText"] for p in prep), "{\"path\": \"src/a.txt\"}")
        called = of_type(turn, "toolCalled")[0]
        self.assertFalse(called["error"])
        self.assertEqual(called["outputs"][0]["text"], "alpha\nbeta\ngamma\n")
        req0, req1 = self.mock.requests
        self.assertEqual(req0["path"], "/v1/messages")
        self.assertEqual(req0["headers"]["x-api-key"], "ak-test")
        self.assertEqual(req0["headers"]["anthropic-version"], "2023-06-01")
        self.assertEqual(req0["body"]["model"], "claude-test")
        self.assertIn("input_schema", req0["body"]["tools"][0])
        msgs = req1["body"]["messages"]
        self.assertEqual(msgs[1]["content"][1], {"type": "tool_use", "id": "toolu_1", "name": "read_file",
                                                 "input": {"path": "src/a.txt"}})
        result = msgs[2]["content"][0]
        self.assertEqual((result["type"], result["tool_use_id"], result["is_error"]),
                         ("tool_result", "toolu_1", False))
        self.assertEqual(result["content"], "alpha\nbeta\ngamma\n")

    # ----- tools -----------------------------------------------------------------------------------

    def test_read_file_sends_the_result_back_with_its_id(self):
        self.mock.add(self.tool_reply("read_file", {"path": "src/a.txt", "line_offset": 1, "limit": 1}),
                      {"text": ["done"]})
        c = self.start()
        self.prompt(c, "read")
        turn = c.turn()
        kinds = [x["content"]["type"] for x in turn if x["content"]["type"].startswith("toolCall")
                 or x["content"]["type"] == "toolCalled"]
        self.assertEqual(kinds[-3:], ["toolCallRun", "toolCallRunning", "toolCalled"])
        self.assertTrue(all(k == "toolCallPrepare" for k in kinds[:-3]))
        run = of_type(turn, "toolCallRun")[0]
        self.assertFalse(run["manualApproval"])
        self.assertEqual(run["arguments"], {"path": "src/a.txt", "line_offset": 1, "limit": 1})
        tool = self.last_tool_message()
        self.assertEqual(tool, {"role": "tool", "tool_call_id": "call_1", "content": "beta\n"})
        assistant = self.mock.requests[1]["body"]["messages"][-2]
        self.assertEqual(assistant["tool_calls"][0]["function"]["name"], "read_file")

    def test_read_file_sees_an_open_documents_unsaved_text(self):
        self.mock.add(self.tool_reply("read_file", {"path": os.path.join(self.ws, "src", "a.txt")}),
                      {"text": ["ok"]})
        c = self.start()
        doc = c.call("document/open", {"uri": "file://" + os.path.join(self.ws, "src", "a.txt")})
        c.call("document/insert", {"documentId": doc["documentId"], "position": {"line": 0, "column": 0},
                                   "text": "UNSAVED "})
        self.prompt(c, "read")
        c.turn()
        self.assertEqual(self.last_tool_message()["content"], "UNSAVED alpha\nbeta\ngamma\n")

    def approve_flow(self, c, approve):
        turn = c.until(lambda x: x["content"]["type"] == "toolCallRun")
        run = turn[-1]["content"]
        self.assertTrue(run["manualApproval"])
        return turn, run

    def test_write_file_waits_for_approval(self):
        self.mock.add(self.tool_reply("write_file", {"path": "new/dir/b.txt", "content": "hello\n"}),
                      {"text": ["written"]})
        c = self.start()
        chat = self.prompt(c, "write")
        _, run = self.approve_flow(c, True)
        time.sleep(0.3)
        self.assertFalse(os.path.exists(os.path.join(self.ws, "new")), "nothing changes before approval")
        c.notify("chat/toolCallApprove", {"chatId": chat, "toolCallId": run["id"]})
        rest = c.turn()
        self.assertEqual(of_type(rest, "toolCallRunning")[0]["id"], "call_1")
        self.assertFalse(of_type(rest, "toolCalled")[0]["error"])
        with open(os.path.join(self.ws, "new", "dir", "b.txt")) as f:
            self.assertEqual(f.read(), "hello\n")
        self.assertIn("Wrote 6 bytes", self.last_tool_message()["content"])

    def test_rejected_edit_changes_nothing_and_tells_the_model(self):
        self.mock.add(self.tool_reply("edit_file", {"path": "src/a.txt", "old_string": "beta", "new_string": "B"}),
                      {"text": ["ok"]})
        c = self.start()
        chat = self.prompt(c, "edit")
        _, run = self.approve_flow(c, False)
        r = c.call("chat/toolCallReject", {"chatId": chat, "toolCallId": run["id"]})
        self.assertEqual(r, {})
        rest = c.turn()
        self.assertEqual(of_type(rest, "toolCallRejected")[0]["reason"], "userChoiceDeny")
        with open(os.path.join(self.ws, "src", "a.txt")) as f:
            self.assertEqual(f.read(), "alpha\nbeta\ngamma\n")
        self.assertTrue(self.last_tool_message()["content"].startswith("Error: "))
        again = c.request("chat/toolCallApprove", {"chatId": chat, "toolCallId": run["id"]})
        self.assertEqual(again["error"]["code"], -32602)

    def test_edit_file_on_disk_and_in_an_open_document(self):
        self.mock.add(self.tool_reply("edit_file", {"path": "src/a.txt", "old_string": "beta\n",
                                                    "new_string": "BETA\n"}),
                      {"text": ["ok"]},
                      self.tool_reply("edit_file", {"path": "src/c.txt", "old_string": "x", "new_string": "y",
                                                    "all_occurrences": True}, call_id="call_2"),
                      {"text": ["ok"]},
                      self.tool_reply("edit_file", {"path": "src/c.txt", "old_string": "zzz", "new_string": "y"},
                                      call_id="call_3"),
                      {"text": ["ok"]})
        with open(os.path.join(self.ws, "src", "c.txt"), "w") as f:
            f.write("x-x-x\n")
        c = self.start()
        chat = self.prompt(c, "edit on disk")
        _, run = self.approve_flow(c, True)
        c.call("chat/toolCallApprove", {"chatId": chat, "toolCallId": run["id"]})
        c.turn()
        with open(os.path.join(self.ws, "src", "a.txt")) as f:
            self.assertEqual(f.read(), "alpha\nBETA\ngamma\n")
        doc = c.call("document/open", {"uri": "file://" + os.path.join(self.ws, "src", "c.txt")})
        self.prompt(c, "edit the open one", chat)
        _, run = self.approve_flow(c, True)
        c.call("chat/toolCallApprove", {"chatId": chat, "toolCallId": run["id"]})
        c.turn()
        self.assertEqual(c.call("document/content", {"documentId": doc["documentId"]})["content"], "y-y-y\n")
        with open(os.path.join(self.ws, "src", "c.txt")) as f:
            self.assertEqual(f.read(), "x-x-x\n", "the open document took the edit, the file waits for a save")
        self.assertTrue(c.call("document/canUndo", {"documentId": doc["documentId"]})["canUndo"])
        self.prompt(c, "edit what is not there", chat)
        _, run = self.approve_flow(c, True)
        c.call("chat/toolCallApprove", {"chatId": chat, "toolCallId": run["id"]})
        turn = c.turn()
        called = of_type(turn, "toolCalled")[0]
        self.assertTrue(called["error"])
        self.assertTrue(called["outputs"][0]["text"].startswith("Error: old_string was not found"))

    def test_list_directory_and_grep(self):
        self.mock.add(self.tool_reply("list_directory", {"path": "."}), {"text": ["ok"]},
                      self.tool_reply("grep", {"pattern": "gam+a"}, call_id="call_g"), {"text": ["ok"]})
        c = self.start()
        chat = self.prompt(c, "list")
        c.turn()
        self.assertEqual(self.last_tool_message()["content"], "src/\n  a.txt\n")
        self.prompt(c, "grep", chat)
        c.turn()
        self.assertEqual(self.last_tool_message()["content"], "src/a.txt:3:gamma\n")

    def test_shell_command_runs_after_approval_with_timeout(self):
        self.mock.add(self.tool_reply("shell_command", {"command": "echo out; echo err >&2; pwd"}),
                      {"text": ["ok"]},
                      self.tool_reply("shell_command", {"command": "sleep 5", "timeout": 300}, call_id="c2"),
                      {"text": ["ok"]},
                      self.tool_reply("shell_command", {"command": "exit 3"}, call_id="c3"), {"text": ["ok"]})
        c = self.start()
        chat = self.prompt(c, "run")
        _, run = self.approve_flow(c, True)
        c.notify("chat/toolCallApprove", {"chatId": chat, "toolCallId": run["id"]})
        c.turn()
        out = self.last_tool_message()["content"]
        self.assertIn("out\n", out)
        self.assertIn("err\n", out)
        self.assertIn(os.path.realpath(self.ws), out)
        self.prompt(c, "hang", chat)
        _, run = self.approve_flow(c, True)
        started = time.monotonic()
        c.notify("chat/toolCallApprove", {"chatId": chat, "toolCallId": run["id"]})
        turn = c.turn()
        self.assertLess(time.monotonic() - started, 3)
        called = of_type(turn, "toolCalled")[0]
        self.assertTrue(called["error"])
        self.assertIn("timed out after 300 ms", called["outputs"][0]["text"])
        self.prompt(c, "fail", chat)
        _, run = self.approve_flow(c, True)
        c.notify("chat/toolCallApprove", {"chatId": chat, "toolCallId": run["id"]})
        turn = c.turn()
        self.assertTrue(of_type(turn, "toolCalled")[0]["outputs"][0]["text"].startswith(
            "Error: the command exited with status 3"))

    def test_query_context_finds_workspace_files(self):
        with open(os.path.join(self.ws, "src", "other.py"), "w") as f:
            f.write("")
        c = self.start()
        r = c.call("chat/queryContext", {"chatId": "q1", "query": "a.t", "contexts": []})
        self.assertEqual(r["chatId"], "q1")
        self.assertEqual(r["contexts"][0], {"type": "file", "path": os.path.join(self.ws, "src", "a.txt")})
        self.assertNotIn("other.py", json.dumps(r))
        bad = c.request("chat/queryContext", {"query": 3})
        self.assertEqual(bad["error"]["code"], -32602)

    def test_git_status_diff_and_log(self):
        git = ["git", "-C", self.ws, "-c", "user.name=Ann", "-c", "user.email=ann@example.com"]
        subprocess.run(git + ["init", "-q", "-b", "main"], check=True)
        subprocess.run(git + ["add", "."], check=True)
        subprocess.run(git + ["commit", "-q", "-m", "first commit"], check=True)
        with open(os.path.join(self.ws, "src", "a.txt"), "w") as f:
            f.write("alpha\nBETA\ngamma\n")
        with open(os.path.join(self.ws, "new.txt"), "w") as f:
            f.write("n\n")
        self.mock.add({"tools": [{"id": "g1", "name": "git", "arguments": ['{"operation":"status"}']},
                                 {"id": "g2", "name": "git", "arguments": ['{"operation":"diff"}']},
                                 {"id": "g3", "name": "git", "arguments": ['{"operation":"diff","path":"src/a.txt"}']},
                                 {"id": "g4", "name": "git", "arguments": ['{"operation":"log"}']},
                                 {"id": "g5", "name": "git", "arguments": ['{"operation":"push"}']}]},
                      {"text": ["ok"]})
        c = self.start()
        self.prompt(c, "git")
        turn = c.turn()
        self.assertEqual(of_type(turn, "toolCallRun")[0]["manualApproval"], False)
        tools = {m["tool_call_id"]: m["content"] for m in self.mock.requests[1]["body"]["messages"]
                 if m["role"] == "tool"}
        self.assertEqual(tools["g1"], "On branch main\nunstaged M src/a.txt\nuntracked new.txt\n")
        diff = ("--- a/src/a.txt\n+++ b/src/a.txt\n@@ -1,3 +1,3 @@\n alpha\n-beta\n+BETA\n gamma\n")
        self.assertEqual(tools["g2"], diff)
        self.assertEqual(tools["g3"], diff)
        self.assertRegex(tools["g4"], r"^[0-9a-f]{8} \d{4}-\d\d-\d\d Ann <ann@example.com> first commit\n$")
        self.assertTrue(tools["g5"].startswith("Error: git: operation must be status, diff or log"))

    @unittest.skipUnless(shutil.which("clangd"), "clangd is not installed")
    def test_diagnostics_come_from_the_language_server(self):
        path = os.path.join(self.ws, "src", "bad.c")
        with open(path, "w") as f:
            f.write("int main(void) { return undefined_name; }\n")
        self.mock.add(self.tool_reply("diagnostics", {"path": "src/bad.c"}), {"text": ["ok"]},
                      self.tool_reply("diagnostics", {}, call_id="d2"), {"text": ["ok"]})
        c = self.start(args=["--trust-workspace"])  # language servers start only in a trusted folder
        c.call("lsp/start", {"languageId": "c"}, timeout=60)
        c.call("document/open", {"uri": "file://" + path})
        deadline = time.time() + 60
        while time.time() < deadline:  # until clangd has published
            _, msg = c.notes.get(timeout=deadline - time.time())
            if msg.get("method") == "lsp/didPublishDiagnostics" and msg["params"].get("diagnostics"):
                break
        chat = self.prompt(c, "what is wrong?")
        c.turn()
        out = self.last_tool_message()["content"]
        self.assertIn("src/bad.c:1:", out)
        self.assertIn("error: ", out)
        self.assertIn("undefined_name", out)
        self.prompt(c, "and everywhere?", chat)
        c.turn()
        self.assertEqual(self.last_tool_message()["content"], out)

    def test_paths_outside_the_workspace_are_refused_without_asking(self):
        os.symlink(self.tmp, os.path.join(self.ws, "escape"))
        outside = os.path.join(self.tmp, "secret.txt")
        cases = [("read_file", {"path": "../secret.txt"}),
                 ("read_file", {"path": outside}),
                 ("read_file", {"path": "escape/secret.txt"}),
                 ("write_file", {"path": "escape/new.txt", "content": "x"}),
                 ("write_file", {"path": "src/../../new.txt", "content": "x"}),
                 ("edit_file", {"path": outside, "old_string": "outside", "new_string": "x"}),
                 ("list_directory", {"path": "escape"}),
                 ("grep", {"pattern": "outside", "path": "escape"})]
        self.mock.add({"tools": [{"id": "c%d" % i, "name": n, "arguments": [json.dumps(a)]}
                                 for i, (n, a) in enumerate(cases)]}, {"text": ["ok"]})
        c = self.start()
        self.prompt(c, "escape")
        turn = c.turn()
        runs = of_type(turn, "toolCallRun")
        self.assertEqual(runs, [], "a refusal asks nobody")
        called = of_type(turn, "toolCalled")
        self.assertEqual(len(called), len(cases))
        for x in called:
            self.assertTrue(x["error"])
            self.assertIn("outside the workspace", x["outputs"][0]["text"])
        tools = [m for m in self.mock.requests[1]["body"]["messages"] if m["role"] == "tool"]
        self.assertEqual([t["tool_call_id"] for t in tools], ["c%d" % i for i in range(len(cases))])
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "new.txt")))
        with open(outside) as f:
            self.assertEqual(f.read(), "outside\n")

    def test_a_directory_swapped_for_a_symlink_while_approval_waits_writes_nothing_outside(self):
        """The path is checked when the call comes and opened again when it runs: a directory replaced by a
        symlink out of the workspace in between is refused at the moment of writing."""
        sub = os.path.join(self.ws, "sub")
        os.makedirs(sub)
        with open(os.path.join(sub, "f.txt"), "w") as f:
            f.write("inside\n")
        outside = os.path.join(self.tmp, "outside")
        os.makedirs(outside)
        with open(os.path.join(outside, "f.txt"), "w") as f:
            f.write("outside\n")
        self.mock.add(self.tool_reply("write_file", {"path": "sub/f.txt", "content": "written\n"}),
                      {"text": ["ok"]},
                      self.tool_reply("edit_file", {"path": "sub/f.txt", "old_string": "side",
                                                    "new_string": "EDITED"}, call_id="call_2"),
                      {"text": ["ok"]},
                      self.tool_reply("write_file", {"path": "sub/new/g.txt", "content": "new\n"}, call_id="call_3"),
                      {"text": ["ok"]})
        c = self.start()
        chat = None
        for message in ("write", "edit", "write a new one"):
            if os.path.islink(sub):
                os.unlink(sub)
                os.rename(sub + ".real", sub)
            chat = self.prompt(c, message, chat)
            _, run = self.approve_flow(c, True)
            os.rename(sub, sub + ".real")
            os.symlink(outside, sub)
            c.call("chat/toolCallApprove", {"chatId": chat, "toolCallId": run["id"]})
            called = of_type(c.turn(), "toolCalled")[0]
            self.assertTrue(called["error"], called)
            self.assertIn("outside the workspace", called["outputs"][0]["text"])
            with open(os.path.join(outside, "f.txt")) as f:
                self.assertEqual(f.read(), "outside\n")
            self.assertEqual(sorted(os.listdir(outside)), ["f.txt"], "nothing new appears outside")
        with open(os.path.join(sub + ".real", "f.txt")) as f:
            self.assertEqual(f.read(), "inside\n")
        self.assertEqual(c.call("chat/list", {})["chats"][0]["id"], chat)

    def test_a_hard_link_to_a_file_outside_is_not_written_in_place(self):
        """Where the directory refuses new files the write goes in place, into the file itself: a hard link
        in that directory to a file outside the workspace is that outside file, and is not written."""
        ro = os.path.join(self.ws, "ro")
        os.makedirs(ro)
        outside = os.path.join(self.tmp, "secret.txt")
        os.link(outside, os.path.join(ro, "linked.txt"))
        with open(os.path.join(ro, "own.txt"), "w") as f:
            f.write("own\n")
        # an immutable directory refuses new files even to root, as a read-only one does to its user
        if subprocess.run(["chattr", "+i", ro], capture_output=True).returncode != 0:
            self.skipTest("chattr +i is not available here")
        self.addCleanup(subprocess.run, ["chattr", "-i", ro], capture_output=True)
        self.mock.add(self.tool_reply("write_file", {"path": "ro/linked.txt", "content": "written\n"}),
                      {"text": ["ok"]},
                      self.tool_reply("write_file", {"path": "ro/own.txt", "content": "written\n"},
                                      call_id="call_2"),
                      {"text": ["ok"]})
        c = self.start()
        chat = self.prompt(c, "write")
        _, run = self.approve_flow(c, True)
        c.call("chat/toolCallApprove", {"chatId": chat, "toolCallId": run["id"]})
        called = of_type(c.turn(), "toolCalled")[0]
        self.assertTrue(called["error"], called)
        self.assertIn("hard link", called["outputs"][0]["text"])
        with open(outside) as f:
            self.assertEqual(f.read(), "outside\n")
        # a file with one link is still written in place
        self.prompt(c, "write own", chat)
        _, run = self.approve_flow(c, True)
        c.call("chat/toolCallApprove", {"chatId": chat, "toolCallId": run["id"]})
        called = of_type(c.turn(), "toolCalled")[0]
        self.assertFalse(called["error"], called)
        with open(os.path.join(ro, "own.txt")) as f:
            self.assertEqual(f.read(), "written\n")

    def test_a_symlink_that_stays_inside_is_followed_when_writing(self):
        """A directory swapped for a symlink to another directory of the workspace is still written to."""
        sub = os.path.join(self.ws, "sub")
        os.makedirs(sub)
        other = os.path.join(self.ws, "other")
        os.makedirs(other)
        self.mock.add(self.tool_reply("write_file", {"path": "sub/f.txt", "content": "written\n"}),
                      {"text": ["ok"]},
                      self.tool_reply("edit_file", {"path": "sub/f.txt", "old_string": "written",
                                                    "new_string": "edited"}, call_id="call_2"),
                      {"text": ["ok"]})
        c = self.start()
        chat = self.prompt(c, "write")
        _, run = self.approve_flow(c, True)
        os.rmdir(sub)
        os.symlink("other", sub)
        c.call("chat/toolCallApprove", {"chatId": chat, "toolCallId": run["id"]})
        called = of_type(c.turn(), "toolCalled")[0]
        self.assertFalse(called["error"], called)
        with open(os.path.join(other, "f.txt")) as f:
            self.assertEqual(f.read(), "written\n")
        self.prompt(c, "edit", chat)
        _, run = self.approve_flow(c, True)
        c.call("chat/toolCallApprove", {"chatId": chat, "toolCallId": run["id"]})
        called = of_type(c.turn(), "toolCalled")[0]
        self.assertFalse(called["error"], called)
        with open(os.path.join(other, "f.txt")) as f:
            self.assertEqual(f.read(), "edited\n")
        self.assertTrue(os.path.islink(sub))

    def test_without_openat2_no_symlink_is_followed_when_writing(self):
        """On a kernel without openat2 the file is opened one component at a time, following no symlink: one
        swapped in out of the workspace is refused, and so is one that stays inside."""
        wrapper = os.environ.get("ECPD_TEST_WITHOUT_OPENAT2")
        if not wrapper:
            self.skipTest("ECPD_TEST_WITHOUT_OPENAT2 is not set")
        sub = os.path.join(self.ws, "sub")
        os.makedirs(sub)
        os.makedirs(os.path.join(self.ws, "other"))
        outside = os.path.join(self.tmp, "outside")
        os.makedirs(outside)
        self.mock.add(self.tool_reply("write_file", {"path": "sub/deep/f.txt", "content": "plain\n"}),
                      {"text": ["ok"]},
                      self.tool_reply("edit_file", {"path": "sub/deep/f.txt", "old_string": "plain",
                                                    "new_string": "edited"}, call_id="call_2"),
                      {"text": ["ok"]},
                      self.tool_reply("read_file", {"path": "sub/deep/f.txt"}, call_id="call_3"),
                      {"text": ["ok"]},
                      self.tool_reply("write_file", {"path": "sub/f.txt", "content": "x\n"}, call_id="call_4"),
                      {"text": ["ok"]},
                      self.tool_reply("write_file", {"path": "sub/f.txt", "content": "x\n"}, call_id="call_5"),
                      {"text": ["ok"]})
        c = self.start(wrapper=[wrapper])
        chat = self.prompt(c, "write")
        _, run = self.approve_flow(c, True)
        c.call("chat/toolCallApprove", {"chatId": chat, "toolCallId": run["id"]})
        self.assertFalse(of_type(c.turn(), "toolCalled")[0]["error"])
        self.prompt(c, "edit", chat)
        _, run = self.approve_flow(c, True)
        c.call("chat/toolCallApprove", {"chatId": chat, "toolCallId": run["id"]})
        self.assertFalse(of_type(c.turn(), "toolCalled")[0]["error"])
        self.prompt(c, "read", chat)
        called = of_type(c.turn(), "toolCalled")[0]
        self.assertEqual(called["outputs"][0]["text"], "edited\n")
        for target in (outside, "other"):
            self.prompt(c, "write through a symlink", chat)
            _, run = self.approve_flow(c, True)
            if os.path.exists(sub + ".real"):
                os.rmdir(sub)
            else:
                os.rename(sub, sub + ".real")
            os.symlink(target, sub)
            c.call("chat/toolCallApprove", {"chatId": chat, "toolCallId": run["id"]})
            called = of_type(c.turn(), "toolCalled")[0]
            self.assertTrue(called["error"], called)
            self.assertIn("outside the workspace", called["outputs"][0]["text"])
            os.unlink(sub)
            os.makedirs(sub)
        self.assertEqual(os.listdir(outside), [])
        self.assertEqual(os.listdir(os.path.join(self.ws, "other")), [])

    def test_unknown_tool_and_arguments_that_are_not_json(self):
        self.mock.add({"tools": [{"id": "u1", "name": "launch_rockets", "arguments": ["{}"]},
                                 {"id": "u2", "name": "read_file", "arguments": ["{\"path\": "]}]},
                      {"text": ["sorry"]})
        c = self.start()
        self.prompt(c, "x")
        turn = c.turn()
        called = of_type(turn, "toolCalled")
        self.assertEqual([x["error"] for x in called], [True, True])
        self.assertIn("unknown tool launch_rockets", called[0]["outputs"][0]["text"])
        self.assertIn("not a JSON object", called[1]["outputs"][0]["text"])
        self.assertEqual(called[1]["arguments"], {})
        self.assertEqual(texts(turn), ["sorry"])

    # ----- failures -----------------------------------------------------------------------------

    def failed_turn(self, c, chat=None):
        chat = self.prompt(c, "x", chat)
        return chat, texts(c.turn(), role="system")

    def test_http_errors_retries_and_the_chat_stays_usable(self):
        self.mock.add({"status": 401, "body": {"error": {"message": "bad key"}}},
                      {"status": 429}, {"text": ["after retry"]},
                      {"status": 500}, {"status": 500}, {"status": 500},
                      {"text": ["fine again"]})
        c = self.start()
        chat, errors = self.failed_turn(c)
        self.assertEqual(errors, ["LLM request failed: HTTP 401: bad key"])
        self.assertEqual(len(self.mock.requests), 1, "401 is not retried")
        self.prompt(c, "again", chat)
        self.assertEqual(texts(c.turn()), ["after retry"])
        self.assertEqual(len(self.mock.requests), 3)
        _, errors = self.failed_turn(c, chat)
        self.assertEqual(errors, ["LLM request failed: HTTP 500: mock error 500"])
        self.assertEqual(len(self.mock.requests), 6, "three attempts, no more")
        self.prompt(c, "and now", chat)
        self.assertEqual(texts(c.turn()), ["fine again"])

    def test_cut_and_malformed_streams_are_errors(self):
        self.mock.add({"text": ["partial"], "cut": True},
                      {"tools": [{"id": "t", "name": "read_file", "arguments": ["{\"pa"]}], "cut": True},
                      {"raw": "data: {not json\n\n"},
                      {"text": ["ok"]})
        c = self.start()
        chat, errors = self.failed_turn(c)
        self.assertEqual(errors, ["LLM request failed: the stream ended before [DONE]"])
        _, errors = self.failed_turn(c, chat)
        self.assertEqual(errors, ["LLM request failed: the stream ended before [DONE]"])
        _, errors = self.failed_turn(c, chat)
        self.assertEqual(len(errors), 1)
        self.assertTrue(errors[0].startswith("LLM request failed: malformed event in the stream"))
        self.prompt(c, "y", chat)
        self.assertEqual(texts(c.turn()), ["ok"])

    def test_anthropic_cut_stream_and_error_event(self):
        self.mock.add({"text": ["a"], "cut": True},
                      {"raw": "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\","
                              "\"message\":\"Overloaded\"}}\n\n", "cut": True})
        c = self.start(api="anthropic")
        chat, errors = self.failed_turn(c)
        self.assertEqual(errors, ["LLM request failed: the stream ended before message_stop"])
        _, errors = self.failed_turn(c, chat)
        self.assertEqual(errors, ["LLM request failed: the provider reported an error: Overloaded"])

    def test_cancel_mid_stream_and_a_second_prompt_while_running(self):
        self.mock.add({"text": ["one ", "two "], "delay": 0.05, "hang": True}, {"text": ["next"]})
        c = self.start()
        chat = self.prompt(c, "long")
        c.until(lambda x: x["content"]["type"] == "text")
        busy = c.request("chat/prompt", {"chatId": chat, "message": "again"})
        self.assertEqual(busy["error"]["code"], -32000)
        started = time.monotonic()
        c.notify("chat/promptStop", {"chatId": chat})
        c.turn()
        self.assertLess(time.monotonic() - started, 1.0)
        self.prompt(c, "next", chat)
        self.assertEqual(texts(c.turn()), ["next"])

    def test_cancel_withdraws_a_pending_approval(self):
        self.mock.add(self.tool_reply("write_file", {"path": "w.txt", "content": "x"}), {"text": ["next"]})
        c = self.start()
        chat = self.prompt(c, "write")
        self.approve_flow(c, True)
        c.call("chat/promptStop", {"chatId": chat})
        turn = c.turn()
        self.assertEqual(of_type(turn, "toolCallRejected")[0]["reason"], "userPromptStop")
        self.assertFalse(os.path.exists(os.path.join(self.ws, "w.txt")))
        self.prompt(c, "go on", chat)
        c.turn()
        self.assertEqual(self.last_tool_message()["content"], "Error: stopped by the user")

    def test_cancel_kills_a_running_command(self):
        marker = os.path.join(self.ws, "still-running")
        self.mock.add(self.tool_reply("shell_command", {"command": "sleep 3; touch still-running"}),
                      {"text": ["next"]})
        c = self.start()
        chat = self.prompt(c, "run")
        _, run = self.approve_flow(c, True)
        c.notify("chat/toolCallApprove", {"chatId": chat, "toolCallId": run["id"]})
        c.until(lambda x: x["content"]["type"] == "toolCallRunning")
        started = time.monotonic()
        c.call("chat/promptStop", {"chatId": chat})
        turn = c.turn()
        self.assertLess(time.monotonic() - started, 1.0)
        self.assertEqual(of_type(turn, "toolCallRejected")[0]["reason"], "userPromptStop")
        time.sleep(3.5)
        self.assertFalse(os.path.exists(marker), "the command's process group was killed")

    def test_a_refused_connection_is_retried_then_reported(self):
        import socket
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()  # nothing listens there now
        c = self.start(OPENAI_BASE_URL="http://127.0.0.1:%d/v1" % port)
        started = time.monotonic()
        _, errors = self.failed_turn(c)
        self.assertGreater(time.monotonic() - started, 0.55, "two retries, after 0.2 s and 0.4 s")
        self.assertEqual(len(errors), 1)
        self.assertTrue(errors[0].startswith("LLM request failed: Could"), errors[0])

    def test_turn_limit_is_bounded(self):
        # the model asks for a tool every time; the turn stops at the limit
        self.mock.add(*[self.tool_reply("read_file", {"path": "src/a.txt"}, call_id="r%d" % i)
                        for i in range(30)])
        c = self.start()
        self.prompt(c, "loop")
        turn = c.turn(timeout=30)
        self.assertIn("turn limit", texts(turn, role="system")[-1])
        self.assertEqual(len(self.mock.requests), 25)

    def test_settings_choose_the_model_turn_limit_and_approval(self):
        c = self.start()
        # agent.model, when neither --model nor ECPD_MODEL is given
        self.assertEqual(c.call("config/set", {"key": "agent.model", "value": "openai/from-setting"}),
                         {"success": True})
        self.mock.add({"text": ["a"]})
        self.prompt(c, "x")
        c.turn()
        self.assertEqual(self.mock.requests[0]["body"]["model"], "from-setting")
        # agent.maxTurns
        c.call("config/set", {"key": "agent.maxTurns", "value": 3})
        self.mock.add(*[self.tool_reply("read_file", {"path": "src/a.txt"}, call_id="r%d" % i) for i in range(3)])
        self.prompt(c, "loop")
        turn = c.turn(timeout=30)
        self.assertIn("turn limit", texts(turn, role="system")[-1])
        self.assertEqual(len(self.mock.requests), 1 + 3)
        # agent.approval "allow": a write runs without asking
        c.call("config/set", {"key": "agent.approval", "value": "allow"})
        self.mock.add(self.tool_reply("write_file", {"path": "allowed.txt", "content": "yes\n"}), {"text": ["done"]})
        self.prompt(c, "write")
        turn = c.turn()
        self.assertFalse(of_type(turn, "toolCallRun")[0]["manualApproval"])
        self.assertFalse(of_type(turn, "toolCalled")[0]["error"])
        with open(os.path.join(self.ws, "allowed.txt")) as f:
            self.assertEqual(f.read(), "yes\n")
        bad = c.request("config/set", {"key": "agent.approval", "value": "sometimes"})
        self.assertEqual(bad["error"]["code"], -32301)
        self.assertEqual(bad["error"]["data"]["key"], "agent.approval")

    # ----- persistence ----------------------------------------------------------------------------

    def test_chats_survive_a_restart(self):
        self.mock.add(self.tool_reply("read_file", {"path": "src/a.txt"}), {"text": ["it is ", "alpha"]})
        c = self.start()
        chat = self.prompt(c, "what is in a.txt?\nsecond line")
        c.turn()
        self.stop(c)
        c = self.start()
        chats = c.call("chat/list", {})["chats"]
        self.assertEqual([x["id"] for x in chats], [chat])
        self.assertEqual(chats[0]["title"], "what is in a.txt?")
        self.assertEqual(chats[0]["messageCount"], 4)
        self.assertEqual(chats[0]["model"], "openai/gpt-4.1")
        opened = c.call("chat/open", {"chatId": chat})
        self.assertTrue(opened["found"])
        roles = [m["role"] for m in opened["messages"]]
        self.assertEqual(roles, ["user", "assistant", "tool", "assistant"])
        self.assertEqual(opened["messages"][1]["toolCalls"][0]["arguments"], {"path": "src/a.txt"})
        self.assertEqual(opened["messages"][3]["text"], "it is alpha")
        self.mock.add({"text": ["continued"]})
        self.prompt(c, "more", chat)
        c.turn()
        self.assertEqual(len(self.mock.requests[-1]["body"]["messages"]), 6)
        self.assertEqual(c.call("chat/delete", {"chatId": chat}), {})
        self.assertFalse(c.call("chat/open", {"chatId": chat})["found"])
        self.stop(c)
        c = self.start()
        self.assertEqual(c.call("chat/list", {})["chats"], [])


    def test_reasoning_streams_as_reason_contents_and_stays_out_of_the_answer(self):
        for api in ("openai", "anthropic"):
            self.mock.add({"reasoning": ["Let me ", "think"], "text": ["Answer"]}, {"text": ["next"]})
            c = self.start(api=api)
            chat = self.prompt(c, "why?")
            turn = [x["content"] for x in c.turn() if x["content"]["type"] not in ("usage", "progress")]
            self.assertEqual([x["type"] for x in turn],
                             ["reasonStarted", "reasonText", "reasonText", "reasonFinished", "text"], api)
            self.assertEqual(len({x["id"] for x in turn[:4]}), 1)
            self.assertEqual("".join(x["text"] for x in turn[1:3]), "Let me think")
            self.assertGreaterEqual(turn[3]["totalTimeMs"], 0)
            self.prompt(c, "and?", chat)
            c.turn()
            body = json.dumps(self.mock.requests[-1]["body"]["messages"])
            self.assertNotIn("think", body, api)
            self.assertIn("Answer", body)
            self.stop(c)

    def test_update_plan_is_checked_and_answered(self):
        entries = [{"content": "read", "status": "completed", "priority": "high"}, {"content": "fix", "status": "pending"}]
        self.mock.add(self.tool_reply("update_plan", {"entries": entries}), {"text": ["planned"]},
                      self.tool_reply("update_plan", {"entries": [{"content": "x", "status": "done"}]}, "call_2"),
                      {"text": ["ok"]})
        c = self.start()
        chat = self.prompt(c, "plan it")
        turn = c.turn()
        self.assertEqual(of_type(turn, "toolCallRun")[0]["manualApproval"], False)
        called = of_type(turn, "toolCalled")[0]
        self.assertFalse(called["error"])
        self.assertEqual(called["outputs"][0]["text"], "The plan is updated (2 steps).")
        self.assertNotIn("plan", [x["content"]["type"] for x in turn])
        self.prompt(c, "again", chat)
        called = of_type(c.turn(), "toolCalled")[0]
        self.assertTrue(called["error"])
        self.assertIn("pending, in_progress or completed", called["outputs"][0]["text"])

    # ----- commands ---------------------------------------------------------------------------

    def test_query_commands_and_a_command_runs_without_the_model(self):
        c = self.start()
        r = c.call("chat/queryCommands", {"chatId": "k", "query": "too"})
        self.assertEqual(r, {"chatId": "k", "commands": [{
            "name": "tools", "description": r["commands"][0]["description"], "type": "native", "arguments": []}]})
        names = [x["name"] for x in c.call("chat/queryCommands", {"query": ""})["commands"]]
        self.assertEqual(names, ["tools", "mcp"])
        self.assertEqual(c.call("chat/queryCommands", {"query": "zzz"})["commands"], [])
        self.assertEqual(c.request("chat/queryCommands", {"query": 1})["error"]["code"], -32602)
        chat = self.prompt(c, "/tools")
        turn = c.turn()
        out = texts(turn, "system")[0]
        for tool in ("read_file", "write_file", "edit_file", "shell_command", "grep"):
            self.assertIn("- %s: " % tool, out)
        self.assertEqual(self.mock.requests, [], "a command asks no model")
        self.assertEqual(c.call("chat/open", {"chatId": chat})["messages"], [])
        self.prompt(c, "/mcp", chat)
        self.assertEqual(texts(c.turn(), "system"), ["No MCP server is configured.\n"])

    # ----- MCP servers -----------------------------------------------------------------------

    def test_mcp_servers_started_listed_called_and_stopped(self):
        node, fs_server = os.environ["ECPD_TEST_NODE"], os.environ["ECPD_TEST_MCP_FILESYSTEM"]
        self.mock.add(self.tool_reply("mcp__fs__list_directory", {"path": os.path.join(self.ws, "src")}),
                      {"text": ["listed"]})
        c = self.start()
        r = c.call("mcp/startServer", {"name": "fs", "command": node, "args": [fs_server, self.ws],
                                        "env": {"MCP_TEST": "1"}})
        self.assertEqual(r["server"]["name"], "fs")
        self.assertEqual(r["server"]["status"], "starting")
        running = c.note("tool/serverUpdated", lambda p: p["name"] == "fs" and p["status"] == "running")
        self.assertEqual(running["type"], "mcp")
        tools = {t["name"]: t for t in running["tools"]}
        self.assertIn("read_text_file", tools)
        self.assertEqual(tools["read_text_file"]["parameters"]["type"], "object")
        listed = c.call("mcp/listServers", {})["servers"]
        self.assertEqual([(x["name"], x["status"], x["args"]) for x in listed], [("fs", "running", [fs_server, self.ws])])
        # the same again goes on serving; another configuration replaces it
        same = c.call("mcp/startServer", {"name": "fs", "command": node, "args": [fs_server, self.ws],
                                          "env": {"MCP_TEST": "1"}})
        self.assertEqual(same["server"]["status"], "running")
        other = c.call("mcp/startServer", {"name": "fs", "command": node, "args": [fs_server, self.ws],
                                           "env": {"MCP_TEST": "2"}})
        self.assertEqual(other["server"]["status"], "starting")
        c.note("tool/serverUpdated", lambda p: p["name"] == "fs" and p["status"] == "running")
        # its tools go to the model and its results come back
        self.prompt(c, "list src")
        turn = c.turn()
        called = of_type(turn, "toolCalled")[0]
        self.assertFalse(called["error"])
        self.assertIn("a.txt", called["outputs"][0]["text"])
        self.assertEqual(of_type(turn, "toolCallRun")[0]["manualApproval"], False)  # read-only
        self.assertIn("mcp__fs__read_text_file", [t["function"]["name"] for t in self.mock.requests[0]["body"]["tools"]])
        self.assertIn("a.txt", self.last_tool_message()["content"])
        # a server that cannot start is reported, and offers nothing
        c.call("mcp/startServer", {"name": "bad", "command": os.path.join(self.tmp, "no-such-server")})
        failed = c.note("tool/serverUpdated", lambda p: p["name"] == "bad" and p["status"] == "failed")
        self.assertEqual(failed["tools"], [])
        shown = c.note("$/showMessage")
        self.assertEqual(shown["type"], "error")
        self.assertIn("bad", shown["message"])
        # stopped: gone, and its tools withdrawn
        self.assertEqual(c.call("mcp/stopServer", {"name": "fs"}), {})
        self.assertEqual(c.note("tool/serverUpdated", lambda p: p["name"] == "fs")["status"], "stopped")
        self.assertEqual([x["name"] for x in c.call("mcp/listServers", {})["servers"]], ["bad"])
        self.mock.add({"text": ["ok"]})
        self.prompt(c, "again")
        c.turn()
        self.assertFalse(any(t["function"]["name"].startswith("mcp__") for t in self.mock.requests[-1]["body"]["tools"]))
        # bad input
        self.assertEqual(c.request("mcp/stopServer", {"name": "fs"})["error"]["code"], -32602)
        self.assertEqual(c.request("mcp/startServer", {"name": "a__b", "command": node})["error"]["code"], -32602)
        self.assertEqual(c.request("mcp/startServer", {"name": "x", "command": node, "args": [1]})["error"]["code"],
                         -32602)

    def test_mcp_server_over_http(self):
        http = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                              "mock_mcp_http.py"), "t0ken"], stdout=subprocess.PIPE)
        self.addCleanup(lambda: (http.kill(), http.wait(), http.stdout.close()))
        url = "http://127.0.0.1:%d/mcp" % int(http.stdout.readline().split()[1])
        self.mock.add(self.tool_reply("mcp__web__echo", {"text": "hi"}), {"text": ["echoed"]},
                      self.tool_reply("mcp__web__broken", {}, "call_2"), {"text": ["broke"]})
        c = self.start()
        r = c.call("mcp/startServer", {"name": "web", "url": url, "headers": {"X-Token": "t0ken"}})
        self.assertEqual((r["server"]["url"], r["server"]["status"]), (url, "starting"))
        self.assertNotIn("command", r["server"])
        running = c.note("tool/serverUpdated", lambda p: p["name"] == "web" and p["status"] != "starting")
        self.assertEqual(running["status"], "running", running)
        self.assertEqual([t["name"] for t in running["tools"]], ["echo", "broken", "slow"])
        chat = self.prompt(c, "echo")
        called = of_type(c.turn(), "toolCalled")[0]
        self.assertEqual((called["error"], called["outputs"][0]["text"]), (False, "echo: hi"))
        self.prompt(c, "break", chat)
        called = of_type(c.turn(), "toolCalled")[0]
        self.assertTrue(called["error"])
        self.assertIn("HTTP 500", called["outputs"][0]["text"])
        # a wrong token: initialize fails, the server is failed and says why
        c.call("mcp/startServer", {"name": "nokey", "url": url})
        failed = c.note("tool/serverUpdated", lambda p: p["name"] == "nokey" and p["status"] != "starting")
        self.assertEqual(failed["status"], "failed")
        self.assertIn("401", failed["error"])
        self.assertEqual(c.request("mcp/startServer", {"name": "ftp", "url": "ftp://x/"})["error"]["code"], -32602)
        self.assertEqual(c.request("mcp/startServer", {"name": "none"})["error"]["code"], -32602)

    def wait_servers(self, c, pred, timeout=30):
        """mcp/listServers once pred holds of it."""
        deadline = time.time() + timeout
        while True:
            servers = c.call("mcp/listServers", {})["servers"]
            if pred(servers) or time.time() > deadline:
                return servers
            time.sleep(0.1)

    def test_mcp_servers_of_the_settings_file_start_with_the_agent(self):
        node, fs_server = os.environ["ECPD_TEST_NODE"], os.environ["ECPD_TEST_MCP_FILESYSTEM"]
        config = os.path.join(self.tmp, "settings.json")
        with open(config, "w") as f:
            json.dump({"agent.mcpServers": {"setfs": {"command": node, "args": [fs_server, self.ws],
                                                      "env": {"MCP_TEST": "1"}}}}, f)
        self.mock.add(self.tool_reply("mcp__setfs__list_directory", {"path": os.path.join(self.ws, "src")}),
                      {"text": ["listed"]})
        c = self.start(args=["--config", config])
        servers = self.wait_servers(c, lambda s: s and s[0]["status"] != "starting")
        self.assertEqual([(x["name"], x["status"], x["args"]) for x in servers],
                         [("setfs", "running", [fs_server, self.ws])], servers)
        self.assertIn("read_text_file", [t["name"] for t in servers[0]["tools"]])
        self.prompt(c, "list src")
        called = of_type(c.turn(), "toolCalled")[0]
        self.assertEqual((called["name"], called["error"]), ("mcp__setfs__list_directory", False))
        self.assertIn("a.txt", called["outputs"][0]["text"])
        # the file changes: the server goes with it
        with open(config, "w") as f:
            json.dump({"agent.mcpServers": {}}, f)
        self.assertEqual(c.note("tool/serverUpdated", lambda p: p["name"] == "setfs", timeout=20)["status"], "stopped")
        self.assertEqual(c.call("mcp/listServers", {})["servers"], [])

    def test_mcp_servers_follow_the_setting(self):
        node, fs_server = os.environ["ECPD_TEST_NODE"], os.environ["ECPD_TEST_MCP_FILESYSTEM"]
        src = os.path.join(self.ws, "src")
        self.mock.add(self.tool_reply("mcp__setfs__list_directory", {"path": src}), {"text": ["listed"]})
        c = self.start()
        self.assertEqual(c.call("config/get", {"key": "agent.mcpServers"}), {"value": {}})
        # a client's server, which the setting must leave alone even when it names it
        c.call("mcp/startServer", {"name": "mine", "command": node, "args": [fs_server, self.ws]})
        c.note("tool/serverUpdated", lambda p: p["name"] == "mine" and p["status"] == "running", timeout=30)
        servers = {"setfs": {"command": node, "args": [fs_server, self.ws]},
                   "mine": {"command": node, "args": [fs_server, src]}}
        self.assertEqual(c.call("config/set", {"key": "agent.mcpServers", "value": servers}), {"success": True})
        running = c.note("tool/serverUpdated", lambda p: p["name"] == "setfs" and p["status"] != "starting",
                         timeout=30)
        self.assertEqual(running["status"], "running", running)
        listed = {x["name"]: x for x in c.call("mcp/listServers", {})["servers"]}
        self.assertEqual(sorted(listed), ["mine", "setfs"])
        self.assertEqual((listed["setfs"]["status"], listed["setfs"]["args"]), ("running", [fs_server, self.ws]))
        self.assertIn("list_directory", [t["name"] for t in listed["setfs"]["tools"]])
        self.assertEqual(listed["mine"]["args"], [fs_server, self.ws])
        # its tools go to the model, and a call comes back
        self.prompt(c, "list src")
        turn = c.turn()
        called = of_type(turn, "toolCalled")[0]
        self.assertEqual((called["name"], called["error"]), ("mcp__setfs__list_directory", False))
        self.assertIn("a.txt", called["outputs"][0]["text"])
        self.assertIn("mcp__setfs__read_text_file",
                      [t["function"]["name"] for t in self.mock.requests[0]["body"]["tools"]])
        # a changed configuration restarts it; the same again leaves it running
        servers["setfs"]["args"] = [fs_server, src]
        c.call("config/set", {"key": "agent.mcpServers", "value": servers})
        c.note("tool/serverUpdated", lambda p: p["name"] == "setfs" and p["status"] == "stopped")
        c.note("tool/serverUpdated", lambda p: p["name"] == "setfs" and p["status"] == "running", timeout=30)
        listed = {x["name"]: x for x in c.call("mcp/listServers", {})["servers"]}
        self.assertEqual(listed["setfs"]["args"], [fs_server, src])
        servers["other"] = {"command": os.path.join(self.tmp, "no-such-server")}
        c.call("config/set", {"key": "agent.mcpServers", "value": servers})
        self.assertEqual(c.note("tool/serverUpdated", lambda p: p["name"] == "other" and p["status"] != "starting")
                         ["status"], "failed")
        self.assertEqual({x["name"]: x["status"] for x in c.call("mcp/listServers", {})["servers"]},
                         {"mine": "running", "setfs": "running", "other": "failed"})
        # removed from the setting: stopped, listed no more, its tools withdrawn; the client's goes on
        c.call("config/set", {"key": "agent.mcpServers", "value": {}})
        self.assertEqual(c.note("tool/serverUpdated", lambda p: p["name"] == "setfs")["status"], "stopped")
        self.assertEqual([(x["name"], x["status"]) for x in c.call("mcp/listServers", {})["servers"]],
                         [("mine", "running")])
        self.mock.add({"text": ["ok"]})
        self.prompt(c, "again")
        c.turn()
        offered = [t["function"]["name"] for t in self.mock.requests[-1]["body"]["tools"]]
        self.assertFalse(any(n.startswith("mcp__setfs__") for n in offered))
        self.assertIn("mcp__mine__read_text_file", offered)
        # values that are not servers are refused, naming the server and the field
        for value, says in (([], "expected object"),
                            ({"a__b": {"command": node}}, "a__b"),
                            ({"x": {"command": node, "args": [1]}}, "server \"x\": args"),
                            ({"x": {"command": node, "env": {"A": 1}}}, "server \"x\": env"),
                            ({"x": "node"}, "server \"x\""),
                            ({"x": {}}, "server \"x\": command"),
                            ({"x": {"url": "ftp://h/"}}, "server \"x\": url"),
                            ({"x": {"command": node, "url": "http://h/"}}, "server \"x\": command and url"),
                            ({"x": {"command": node, "headers": {}}}, "server \"x\": headers"),
                            ({"x": {"command": node, "cwd": "/"}}, "unknown field \"cwd\"")):
            bad = c.request("config/set", {"key": "agent.mcpServers", "value": value})
            self.assertEqual(bad["error"]["code"], -32301, value)
            self.assertEqual(bad["error"]["data"]["key"], "agent.mcpServers")
            self.assertIn(says, bad["error"]["data"]["reason"])
        self.assertEqual(c.call("config/get", {"key": "agent.mcpServers"}), {"value": {}})
        # an HTTP server's form is taken
        self.assertEqual(c.call("config/set", {"key": "agent.mcpServers",
                                               "value": {"web": {"url": "http://127.0.0.1:1/mcp",
                                                                 "headers": {"X-Token": "t"}}}}),
                         {"success": True})
        web = c.note("tool/serverUpdated", lambda p: p["name"] == "web" and p["status"] != "starting", timeout=30)
        self.assertEqual((web["url"], web["status"]), ("http://127.0.0.1:1/mcp", "failed"))

    # ----- stopping ---------------------------------------------------------------------------

    def test_stopping_while_a_prompt_waits_for_a_key_or_a_search_runs(self):
        """The server stops cleanly (no leak, no error) whatever it was waiting for."""
        for i in range(200):
            with open(os.path.join(self.ws, "src", "f%03d.txt" % i), "w") as f:
                f.write("x\n")
        for _ in range(3):
            c = self.start(api=None, ANTHROPIC_BASE_URL="http://127.0.0.1:%d" % self.mock.port,
                           ECPD_MODEL="anthropic/claude-test")
            c.write({"jsonrpc": "2.0", "id": 100, "method": "chat/prompt", "params": {"message": "x"}})
            c.write({"jsonrpc": "2.0", "id": 101, "method": "chat/queryContext", "params": {"query": "f1"}})
            c.write({"jsonrpc": "2.0", "id": 102, "method": "shutdown"})
            c.write({"jsonrpc": "2.0", "method": "exit"})
            self.assertEqual(c.p.wait(timeout=20), 0)
            self.stop(c)  # checks stderr for sanitizer reports
        self.assertEqual(self.mock.requests, [])


class EcaTest(Base):
    """`ecpd --eca`: an ECA client, Content-Length framing, the workspace from initialize's workspaceFolders."""

    def test_eca_session(self):
        self.mock.add(self.tool_reply("write_file", {"path": "eca.txt", "content": "from eca"}),
                      {"text": ["Done", "."]})
        env = self.env()
        # started elsewhere: the workspace is the first of the client's workspaceFolders
        c = Client(self.data, None, env, ("--eca",), cwd=self.tmp)
        self.clients.append(c)
        init = c.call("initialize", {"processId": os.getpid(), "clientInfo": {"name": "eca-test"},
                                     "capabilities": {"codeAssistant": {"chat": True}},
                                     "workspaceFolders": [{"uri": "file://" + self.ws, "name": "ws"}]})
        self.assertIn("chat", init["capabilities"]["namespaces"] if "namespaces" in init["capabilities"]
                      else ["chat"])
        c.notify("initialized", {})
        r = c.call("chat/prompt", {"chatId": "eca-chat-1", "message": "write it"})
        self.assertEqual(r, {"chatId": "eca-chat-1", "model": "openai/gpt-4.1", "status": "prompting"})
        turn = c.until(lambda x: x["content"]["type"] == "toolCallRun")
        self.assertEqual(turn[0]["content"]["type"], "progress")
        kinds = [x["content"]["type"] for x in turn[1:] if x["content"]["type"] != "usage"]
        self.assertEqual(set(kinds[:-1]), {"toolCallPrepare"})
        c.notify("chat/toolCallApprove", {"chatId": "eca-chat-1", "toolCallId": "call_1"})
        rest = c.turn()
        kinds = [x["content"]["type"] for x in rest]
        self.assertEqual(kinds[:2], ["toolCallRunning", "toolCalled"])
        self.assertEqual(texts(rest), ["Done", "."])
        with open(os.path.join(self.ws, "eca.txt")) as f:
            self.assertEqual(f.read(), "from eca")
        self.assertEqual(c.call("chat/list", {})["chats"][0]["id"], "eca-chat-1")
        self.assertTrue(c.call("chat/open", {"chatId": "eca-chat-1"})["found"])
        self.assertEqual(c.request("chat/rollback", {"chatId": "eca-chat-1"})["error"]["code"], -32601)
        found = c.call("chat/queryContext", {"query": "eca"})["contexts"]
        self.assertEqual([os.path.basename(x["path"]) for x in found], ["eca.txt"])
        c.notify("chat/someFutureNotification", {})
        self.assertEqual(c.call("chat/delete", {"chatId": "eca-chat-1"}), {})
        # ECA defines no error for chat/delete: a chat that is gone, or never was, is answered {} as well
        self.assertEqual(c.call("chat/delete", {"chatId": "eca-chat-1"}), {})
        self.assertEqual(c.call("chat/delete", {"chatId": "never-was"}), {})
        self.assertEqual(c.call("chat/list", {})["chats"], [])
        self.assertIsNone(c.call("shutdown"))
        c.notify("exit", {})
        self.assertEqual(c.p.wait(timeout=10), 0)


if __name__ == "__main__":
    ECPD = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
