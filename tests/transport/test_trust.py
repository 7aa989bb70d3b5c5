#!/usr/bin/env python3
"""Workspace trust through the real ecpd binary.

usage: test_trust.py ECPD

A cloned repository's .ecpd/settings.json may name programs (agent.mcpServers,
terminal.integrated.shell) and widen permissions (agent.approval). Until the
user trusts the folder none of that applies and nothing it names runs; the
user's own settings still do. Trusting applies them at once, is kept in the
data directory, and covers the folders beneath.
"""
import json
import os
import shutil
import stat
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "agent"))
import test_agent  # noqa: E402
from mock_llm import MockLLM  # noqa: E402
from test_agent import Client, of_type, texts  # noqa: E402

RESTRICTED = ("terminal.integrated.shell", "agent.approval", "agent.mcpServers")  # in the schema's order


class TrustTest(unittest.TestCase):
    def setUp(self):
        self.tmp = os.path.realpath(tempfile.mkdtemp(prefix="ecpd-trust-"))
        self.ws = os.path.join(self.tmp, "repo")
        self.data = os.path.join(self.tmp, "data")
        self.mcp_mark = os.path.join(self.tmp, "mcp-started")
        self.shell_mark = os.path.join(self.tmp, "shell-started")
        os.makedirs(os.path.join(self.ws, ".ecpd"))
        os.makedirs(os.path.join(self.ws, "sub", "deeper"))
        with open(os.path.join(self.ws, "a.txt"), "w") as f:
            f.write("alpha\n")
        shell = os.path.join(self.ws, "tools", "shell.sh")
        os.makedirs(os.path.dirname(shell))
        with open(shell, "w") as f:
            f.write("#!/bin/sh\necho started >> '%s'\nexec /bin/sh \"$@\"\n" % self.shell_mark)
        os.chmod(shell, os.stat(shell).st_mode | stat.S_IXUSR)
        self.workspace_settings = {
            "agent.mcpServers": {"mark": {"command": sys.executable,
                                          "args": [os.path.join(HERE, "marker_mcp.py"), self.mcp_mark]}},
            "agent.approval": "allow",
            "terminal.integrated.shell": shell,
            "editor.tabSize": 3,  # not restricted: applies untrusted
        }
        with open(os.path.join(self.ws, ".ecpd", "settings.json"), "w") as f:
            json.dump(self.workspace_settings, f)
        self.config = os.path.join(self.tmp, "user.json")
        with open(self.config, "w") as f:
            json.dump({"agent.approval": "ask"}, f)
        self.mock = MockLLM()
        self.clients = []

    def tearDown(self):
        for c in self.clients:
            c.close()
        self.mock.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def env(self):
        env = {k: v for k, v in os.environ.items() if k not in test_agent.PROVIDER_VARS}
        env.update(OPENAI_API_KEY="sk-test", OPENAI_BASE_URL="http://127.0.0.1:%d/v1" % self.mock.port)
        return env

    def start(self, *args, workspace=True, initialize=None):
        c = Client(self.data, self.ws if workspace else None, self.env(),
                   ["--config", self.config] + list(args))
        self.clients.append(c)
        c.call("initialize", initialize if initialize is not None else {"processId": os.getpid()})
        return c

    def stop(self, c):
        self.clients.remove(c)
        c.close()

    def uri(self, path):
        return "file://" + path

    def notes_now(self, c, method):
        """Every `method` notification that came so far (a ping first, so all before it are in)."""
        c.call("ecp/ping", {})
        out = []
        while not c.notes.empty():
            _, msg = c.notes.get()
            if msg.get("method") == method:
                out.append(msg["params"])
        return out

    def notes_until(self, c, method, timeout=10):
        """The notifications up to and including the next `method`."""
        seen = []
        deadline = time.time() + timeout
        while not seen or seen[-1].get("method") != method:
            _, msg = c.notes.get(timeout=max(0.01, deadline - time.time()))
            seen.append(msg)
        return seen

    def no_marks(self):
        self.assertFalse(os.path.exists(self.mcp_mark), "an MCP server of the workspace ran")
        self.assertFalse(os.path.exists(self.shell_mark), "the workspace's shell ran")

    def assert_restricted(self, c):
        approval = c.call("config/get", {"key": "agent.approval"})
        self.assertEqual(approval, {"value": "ask", "restricted": True, "workspaceValue": "allow"})
        servers = c.call("config/get", {"key": "agent.mcpServers"})
        self.assertEqual(servers, {"value": {}, "restricted": True,
                                   "workspaceValue": self.workspace_settings["agent.mcpServers"]})
        shell = c.call("config/get", {"key": "terminal.integrated.shell"})
        self.assertTrue(shell["restricted"])
        self.assertNotEqual(shell["value"], self.workspace_settings["terminal.integrated.shell"])
        self.assertEqual(c.call("config/get", {"key": "editor.tabSize"}), {"value": 3})
        self.assertEqual(c.call("workspace/isTrusted", {}), {"trusted": False, "ignoredSettings": list(RESTRICTED)})

    def assert_one_notice(self, c):
        note = c.note("$/showMessage", lambda p: "agent.approval" in p["message"], timeout=10)
        for key in RESTRICTED:
            self.assertIn(key, note["message"])
        self.assertNotIn("editor.tabSize", note["message"])
        time.sleep(0.3)
        again = [n for n in self.notes_now(c, "$/showMessage") if "agent.approval" in n["message"]]
        self.assertEqual(again, [], "the restricted keys are named once")

    def run_a_terminal(self, c):
        t = c.call("terminal/create", {})["terminalId"]
        c.call("terminal/write", {"terminalId": t, "data": "echo hi\n"})
        time.sleep(0.5)
        c.call("terminal/close", {"terminalId": t})

    # ----- the attack ---------------------------------------------------------------------------

    def test_an_untrusted_workspace_runs_nothing_until_trusted(self):
        c = self.start()
        self.assert_one_notice(c)
        self.assert_restricted(c)
        time.sleep(0.5)
        self.no_marks()
        # the user's shell, not the workspace's
        self.run_a_terminal(c)
        self.no_marks()

        # trusting applies the workspace's values at once
        self.assertEqual(c.call("workspace/trust", {"uri": self.uri(self.ws), "trusted": True}), {"trusted": True})
        before = self.notes_until(c, "workspace/didChangeTrust")
        self.assertEqual(before[-1]["params"], {"uri": self.uri(self.ws), "trusted": True})
        # each newly effective value was told first, as any change is
        changed = {n["params"]["key"]: n["params"]["value"] for n in before if n["method"] == "config/didChange"}
        self.assertEqual(changed, {k: self.workspace_settings[k] for k in RESTRICTED})
        self.assertEqual(c.call("config/get", {"key": "agent.approval"}), {"value": "allow"})
        self.assertEqual(c.call("config/get", {"key": "agent.mcpServers"}),
                         {"value": self.workspace_settings["agent.mcpServers"]})
        self.assertEqual(c.call("workspace/isTrusted", {}), {"trusted": True, "ignoredSettings": []})
        time.sleep(0.5)
        self.assertFalse(os.path.exists(self.mcp_mark), "MCP servers start when a chat needs them")
        # the first prompt starts them, and waits for their tools
        self.mock.add({"text": ["tools"]})
        c.call("chat/prompt", {"message": "which tools?"})
        self.assertEqual(texts(c.turn(timeout=30)), ["tools"])
        self.assertTrue(os.path.exists(self.mcp_mark))
        offered = [t["function"]["name"] for t in self.mock.requests[-1]["body"]["tools"]]
        self.assertIn("mcp__mark__mark", offered)
        self.run_a_terminal(c)
        self.assertTrue(os.path.exists(self.shell_mark), "the trusted workspace's shell runs")

        # withdrawn: reverted the same way, and the setting's MCP server stops
        os.unlink(self.shell_mark)
        self.assertEqual(c.call("workspace/trust", {"uri": self.uri(self.ws), "trusted": False}),
                         {"trusted": False})
        before = self.notes_until(c, "workspace/didChangeTrust")
        self.assertEqual(before[-1]["params"], {"uri": self.uri(self.ws), "trusted": False})
        self.assertIn(("mark", "stopped"), [(n["params"]["name"], n["params"]["status"]) for n in before
                                            if n["method"] == "tool/serverUpdated"])
        self.assert_restricted(c)
        self.run_a_terminal(c)
        self.assertFalse(os.path.exists(self.shell_mark))

    def test_an_untrusted_workspace_chat_asks_and_offers_no_workspace_tools(self):
        c = self.start()
        self.mock.add(self.write_reply(), {"text": ["ok"]})
        chat = c.call("chat/prompt", {"message": "write"})["chatId"]
        run = of_type(c.until(lambda x: x["content"]["type"] == "toolCallRun"), "toolCallRun")[0]
        self.assertTrue(run["manualApproval"], "agent.approval of the workspace must not apply")
        c.call("chat/promptStop", {"chatId": chat})
        offered = [t["function"]["name"] for t in self.mock.requests[0]["body"]["tools"]]
        self.assertFalse([n for n in offered if n.startswith("mcp__")])
        self.assertEqual(c.call("mcp/listServers", {})["servers"], [])
        self.assertFalse(os.path.exists(os.path.join(self.ws, "b.txt")))
        self.no_marks()
        # once something has needed MCP servers, trusting starts the workspace's at once
        c.call("workspace/trust", {"uri": self.uri(self.ws), "trusted": True})
        running = c.note("tool/serverUpdated", lambda p: p["name"] == "mark" and p["status"] != "starting",
                         timeout=30)
        self.assertEqual(running["status"], "running", running)
        self.assertTrue(os.path.exists(self.mcp_mark))

    def test_a_settings_file_written_while_serving_is_restricted_too(self):
        settings = os.path.join(self.ws, ".ecpd", "settings.json")
        os.rename(settings, settings + ".later")
        c = self.start()
        self.assertEqual(c.call("workspace/isTrusted", {}), {"trusted": False, "ignoredSettings": []})
        self.assertEqual(c.call("mcp/listServers", {})["servers"], [])  # the agent follows the setting from now
        os.rename(settings + ".later", settings)
        self.assert_one_notice(c)
        self.assert_restricted(c)
        time.sleep(0.5)
        self.assertEqual(c.call("mcp/listServers", {})["servers"], [])
        self.no_marks()

    def write_reply(self):
        text = json.dumps({"path": "b.txt", "content": "b\n"})
        return {"tools": [{"id": "call_1", "name": "write_file", "arguments": [text]}]}

    def test_initialize_naming_the_workspace_runs_nothing(self):
        c = self.start(workspace=False, initialize={"processId": os.getpid(), "workspaceRoot": self.uri(self.ws)})
        self.assert_one_notice(c)
        self.assert_restricted(c)
        self.assertEqual(c.call("mcp/listServers", {})["servers"], [])
        self.run_a_terminal(c)
        time.sleep(0.3)
        self.no_marks()

    def test_trust_persists_covers_nested_folders_and_follows_real_paths(self):
        c = self.start()
        c.call("workspace/trust", {"uri": self.uri(self.ws), "trusted": True})
        self.stop(c)
        # a restart on the same data directory: still trusted, and no notice
        c = self.start()
        self.assertEqual(c.call("workspace/isTrusted", {}), {"trusted": True, "ignoredSettings": []})
        self.assertEqual(c.call("config/get", {"key": "agent.approval"}), {"value": "allow"})
        self.assertEqual(c.call("workspace/isTrusted", {"uri": self.uri(os.path.join(self.ws, "sub", "deeper"))}),
                         {"trusted": True})
        self.assertEqual([n for n in self.notes_now(c, "$/showMessage") if "agent.approval" in n["message"]], [])
        # a link to it is the same folder; its parent and a sibling are not trusted
        link = os.path.join(self.tmp, "link")
        os.symlink(self.ws, link)
        self.assertEqual(c.call("workspace/isTrusted", {"uri": self.uri(link)}), {"trusted": True})
        self.assertEqual(c.call("workspace/isTrusted", {"uri": self.uri(self.tmp)}), {"trusted": False})
        sibling = self.ws + "-sibling"  # a common prefix is not an ancestor
        os.makedirs(sibling)
        self.assertEqual(c.call("workspace/isTrusted", {"uri": self.uri(sibling)}), {"trusted": False})
        # a workspace nested in a trusted folder is trusted
        self.stop(c)
        self.ws_parent = self.ws
        c = self.start()
        c.call("workspace/trust", {"uri": self.uri(self.ws), "trusted": False})
        c.call("workspace/trust", {"uri": self.uri(self.tmp), "trusted": True})
        self.assertEqual(c.call("workspace/isTrusted", {}), {"trusted": True, "ignoredSettings": []})
        self.stop(c)
        c = self.start()
        self.assertEqual(c.call("config/get", {"key": "agent.approval"}), {"value": "allow"})

    def test_trust_workspace_flag_trusts_for_that_run_only(self):
        c = self.start("--trust-workspace")
        self.assertEqual(c.call("workspace/isTrusted", {}), {"trusted": True, "ignoredSettings": []})
        self.assertEqual(c.call("config/get", {"key": "agent.approval"}), {"value": "allow"})
        time.sleep(0.3)
        self.assertFalse(os.path.exists(self.mcp_mark), "MCP servers start when a chat needs them")
        self.assertEqual([s["name"] for s in c.call("mcp/listServers", {})["servers"]], ["mark"])
        self.stop(c)
        c = self.start()
        self.assertEqual(c.call("workspace/isTrusted", {}), {"trusted": False, "ignoredSettings": list(RESTRICTED)})

    def test_trust_workspace_flag_does_not_cover_a_folder_initialize_names_later(self):
        """The flag names the folder the server starts on; a client's initialize naming a clone afterwards
        does not inherit it."""
        other = os.path.join(self.tmp, "clone")
        os.makedirs(os.path.join(other, ".ecpd"))
        with open(os.path.join(other, ".ecpd", "settings.json"), "w") as f:
            json.dump(self.workspace_settings, f)
        c = self.start("--trust-workspace")
        self.assertEqual(c.call("config/get", {"key": "agent.approval"}), {"value": "allow"})
        c.call("initialize", {"processId": os.getpid(), "workspaceFolders": [{"uri": self.uri(other), "name": "c"}]})
        deadline = time.time() + 10  # the new workspace's file is read off the loop
        while c.call("workspace/isTrusted", {})["ignoredSettings"] == [] and time.time() < deadline:
            time.sleep(0.05)
        self.assertEqual(c.call("workspace/isTrusted", {}), {"trusted": False, "ignoredSettings": list(RESTRICTED)})
        self.assertEqual(c.call("config/get", {"key": "agent.approval"}),
                         {"value": "ask", "restricted": True, "workspaceValue": "allow"})
        self.assertEqual(c.call("workspace/isTrusted", {"uri": self.uri(self.ws)}), {"trusted": True})
        self.assertEqual(c.call("workspace/isTrusted", {"uri": self.uri(self.ws + "/sub")}), {"trusted": True})
        self.no_marks()

    def test_the_users_mcp_command_is_not_found_in_the_workspace_through_a_relative_path_entry(self):
        """The user's own MCP server applies untrusted; its bare command must not be found in the workspace
        through an empty or "." PATH entry (the server runs in the workspace)."""
        mark = os.path.join(self.tmp, "planted-ran")
        planted = os.path.join(self.ws, "ecpd-test-mcp-tool")
        with open(planted, "w") as f:
            f.write("#!/bin/sh\necho ran >> '%s'\n" % mark)
        os.chmod(planted, 0o755)
        with open(self.config, "w") as f:
            json.dump({"agent.approval": "ask", "agent.mcpServers": {"tool": {"command": "ecpd-test-mcp-tool"}}}, f)
        env = self.env()
        env["PATH"] = ".:" + env.get("PATH", "/usr/bin:/bin") + ":"
        c = Client(self.data, self.ws, env, ["--config", self.config])
        self.clients.append(c)
        c.call("initialize", {"processId": os.getpid()})
        self.mock.add({"text": ["ok"]})
        c.call("chat/prompt", {"message": "hi"})
        c.note("tool/serverUpdated", lambda p: p["name"] == "tool" and p["status"] != "starting", timeout=30)
        time.sleep(0.3)
        self.assertFalse(os.path.exists(mark), "the workspace's program ran as the user's MCP server")

    def test_bad_params_are_refused_naming_the_field(self):
        c = self.start()
        a_file = os.path.join(self.ws, "a.txt")
        for params, code, says in (({"trusted": True}, -32602, "uri"),
                                   ({"uri": self.uri(self.ws)}, -32602, "trusted"),
                                   ({"uri": 7, "trusted": True}, -32602, "uri"),
                                   ({"uri": self.uri(self.ws), "trusted": "yes"}, -32602, "trusted"),
                                   ({"uri": "relative/dir", "trusted": True}, -32602, "uri"),
                                   ({"uri": self.uri(a_file), "trusted": True}, -32103, a_file),
                                   ({"uri": self.uri(self.ws + "/gone"), "trusted": True}, -32100, "gone")):
            err = c.request("workspace/trust", params)["error"]
            self.assertEqual(err["code"], code, (params, err))
            self.assertIn(says, err["message"], params)
        self.assertEqual(c.request("workspace/isTrusted", {"uri": 1})["error"]["code"], -32602)
        self.assertEqual(c.request("workspace/isTrusted", {"uri": self.uri(a_file)})["error"]["code"], -32103)
        # nothing was trusted by any of them
        self.assertEqual(c.call("workspace/isTrusted", {}), {"trusted": False, "ignoredSettings": list(RESTRICTED)})
        schema = c.call("config/schema", {})["schema"]["properties"]
        self.assertEqual(sorted(k for k, row in schema.items() if row.get("restricted")),
                         sorted(RESTRICTED + ("ultra.ai.apiKey", "workbench.startupEditor")))
        methods = [m["name"] for m in c.call("ecp/methods", {})["methods"]]
        self.assertIn("workspace/trust", methods)
        self.assertIn("workspace/isTrusted", methods)

    def test_no_workspace_is_not_trusted_and_says_so(self):
        c = self.start(workspace=False)
        self.assertEqual(c.call("workspace/isTrusted", {}), {"trusted": False, "ignoredSettings": []})


if __name__ == "__main__":
    test_agent.ECPD = sys.argv.pop(1)
    unittest.main(verbosity=2)
