"""Language servers and workspace trust, through the real ecpd binary.

usage: test_lsp_trust.py ECPD

A language server runs what the workspace it is started on names:
typescript-language-server prefers the workspace's node_modules/typescript
(node then runs its tsserver.js), pyright reads the Python environment the
pyrightconfig.json names and runs an interpreter there. So no server starts on a
folder the user has not trusted, withdrawing the trust stops the servers
rooted there, and a PATH entry that is relative (".", "bin", or empty, which
all name the working directory, often the workspace) is never searched.
"""
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import unittest

ECPD = None
HERE = os.path.dirname(os.path.abspath(__file__))
NODE_MODULES = os.path.join(HERE, "..", "..", "third_party", "node", "node_modules")
NODE_BIN = os.path.join(NODE_MODULES, ".bin")
REAL_TSSERVER = os.path.realpath(os.path.join(NODE_MODULES, "typescript", "lib", "tsserver.js"))
NOT_TRUSTED = -32410


def descendants(pid):
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    kids = [int(p) for p in out.split()]
    return kids + [d for k in kids for d in descendants(k)]


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def wait_gone(pids, seconds=10):
    deadline = time.time() + seconds
    while time.time() < deadline and any(alive(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if alive(p)]


def wait_no_descendants(pid, seconds=10):
    """What is still running beneath pid once it all had seconds to end (a server's own children too)."""
    deadline = time.time() + seconds
    while time.time() < deadline and descendants(pid):
        time.sleep(0.05)
    return descendants(pid)


def write(path, text, executable=False):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    if executable:
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)


class Server:
    def __init__(self, workspace, data, args=(), env=None, cwd=None):
        self.p = subprocess.Popen([ECPD, "--stdio", "--workspace", workspace, "--data-dir", data] + list(args),
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                  env=env, cwd=cwd)
        self.next_id = 1
        self.notes = []

    def request(self, method, params):
        """(result, None) or (None, error)."""
        i = self.next_id
        self.next_id += 1
        self.p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n").encode())
        self.p.stdin.flush()
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise EOFError("ecpd closed stdout")
            m = json.loads(line)
            if m.get("id") == i:
                return m.get("result"), m.get("error")
            self.notes.append(m)

    def call(self, method, params):
        result, error = self.request(method, params)
        if error:
            raise AssertionError("%s failed: %s" % (method, error))
        return result

    def close(self):
        """ecpd's exit status once its stdin is closed (a sanitizer's finding makes it non-zero)."""
        if self.p.poll() is None:
            self.p.stdin.close()
            try:
                self.p.wait(20)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.p.stdout.close()
        return self.p.returncode


class LspTrustTest(unittest.TestCase):
    def setUp(self):
        self.tmp = os.path.realpath(tempfile.mkdtemp(prefix="ecpd-lsp-trust-"))
        self.ws = os.path.join(self.tmp, "repo")
        self.data = os.path.join(self.tmp, "data")
        self.ts_mark = os.path.join(self.tmp, "tsserver-ran")
        self.py_mark = os.path.join(self.tmp, "python-ran")
        os.makedirs(self.ws)
        # The workspace's own TypeScript: its tsserver.js marks that it ran, then is the real one.
        write(os.path.join(self.ws, "node_modules", "typescript", "package.json"),
              json.dumps({"name": "typescript", "version": "5.9.3"}))
        write(os.path.join(self.ws, "node_modules", "typescript", "lib", "tsserver.js"),
              "require('fs').appendFileSync(%s, 'ran\\n');\nrequire(%s);\n"
              % (json.dumps(self.ts_mark), json.dumps(REAL_TSSERVER)))
        # The workspace's Python environment: its interpreter marks that it ran, then is the real one.
        write(os.path.join(self.ws, "pyrightconfig.json"), json.dumps({"venvPath": ".", "venv": "venv"}))
        write(os.path.join(self.ws, "venv", "bin", "python"),
              "#!/bin/sh\necho ran >> '%s'\nexec '%s' \"$@\"\n" % (self.py_mark, sys.executable), executable=True)
        write(os.path.join(self.ws, "venv", "pyvenv.cfg"), "home = /usr/bin\n")
        write(os.path.join(self.ws, "a.ts"), "export const answer: number = 42;\n")
        write(os.path.join(self.ws, "a.py"), "answer = 42\n")
        self.servers = []

    def tearDown(self):
        statuses = [s.close() for s in self.servers]
        shutil.rmtree(self.tmp, ignore_errors=True)
        self.assertEqual(statuses, [0] * len(statuses))

    def start(self, *args, **kwargs):
        s = Server(self.ws, self.data, *args, **kwargs)
        self.servers.append(s)
        return s

    def assert_not_trusted(self, s, params):
        result, error = s.request("lsp/start", params)
        self.assertIsNone(result)
        self.assertEqual(error["code"], NOT_TRUSTED, error)
        self.assertIn(self.ws, error["message"])
        self.assertIn("workspace/trust", error["message"])

    @unittest.skipUnless(os.path.exists(os.path.join(NODE_BIN, "typescript-language-server")) and
                         os.path.exists(os.path.join(NODE_BIN, "pyright-langserver")),
                         "third_party/node has no typescript-language-server or pyright")
    def test_an_untrusted_workspace_starts_no_server_until_trusted(self):
        s = self.start()
        # pyright is a client's choice, as the existing tests make it
        s.call("lsp/setServerConfig", {"languageId": "python",
                                       "config": {"command": "pyright-langserver", "args": ["--stdio"]}})
        for language in ("typescript", "python"):
            self.assert_not_trusted(s, {"languageId": language})
            self.assert_not_trusted(s, {"languageId": language, "workspaceUri": "file://" + self.ws})
        # a folder beneath it is no more trusted than the workspace
        self.assert_not_trusted(s, {"languageId": "typescript", "workspaceUri": "file://" + self.ws + "/venv"})
        # a document a client holds does not start its server either
        s.call("lsp/documentOpen", {"uri": "file://" + self.ws + "/a.ts", "languageId": "typescript",
                                    "content": "export const x = 1;\n"})
        s.call("document/open", {"uri": "file://" + self.ws + "/a.py"})
        time.sleep(1.5)
        self.assertEqual(descendants(s.p.pid), [])
        self.assertFalse(os.path.exists(self.ts_mark))
        self.assertFalse(os.path.exists(self.py_mark))
        self.assertEqual([v for v in s.call("lsp/status", {})["servers"] if v["status"] != "stopped"], [])

        # trusting starts the servers of the open documents, unless lsp.enabled is false
        s.call("config/set", {"key": "lsp.enabled", "value": False})
        self.assertTrue(s.call("workspace/trust", {"uri": "file://" + self.ws, "trusted": True})["trusted"])
        self.assertFalse(os.path.exists(self.ts_mark))  # trusting starts nothing by itself
        self.assertEqual(descendants(s.p.pid), [])
        s.call("config/set", {"key": "lsp.enabled", "value": True})
        self.assertTrue(s.call("lsp/start", {"languageId": "typescript"})["ready"])
        self.assertTrue(s.call("lsp/start", {"languageId": "python"})["ready"])
        # typescript-language-server does run the workspace's tsserver.js, now that it is trusted (this
        # pyright reads the venv's site-packages without running its python: that marker stays a guard)
        deadline = time.time() + 30
        while time.time() < deadline and not os.path.exists(self.ts_mark):
            time.sleep(0.1)
        self.assertTrue(os.path.exists(self.ts_mark), "the workspace's tsserver.js did not run")
        running = descendants(s.p.pid)
        self.assertGreaterEqual(len(running), 2)

        # withdrawing the trust of the workspace stops the servers rooted in it, as lsp/stop does
        s.notes.clear()
        self.assertFalse(s.call("workspace/trust", {"uri": "file://" + self.ws, "trusted": False})["trusted"])
        stopped = sorted(n["params"]["languageId"] for n in s.notes
                         if n.get("method") == "lsp/serverStatusChanged" and n["params"]["status"] == "stopped")
        self.assertEqual(stopped, ["python", "typescript"])
        self.assertEqual(wait_gone(running), [])
        self.assertEqual(s.call("lsp/status", {})["servers"], [])
        self.assert_not_trusted(s, {"languageId": "typescript"})
        self.assertEqual(wait_no_descendants(s.p.pid), [])

    def test_a_trusted_parent_covers_and_its_withdrawal_stops(self):
        fake = os.path.join(HERE, "fake_server.py")
        s = self.start()
        s.call("lsp/setServerConfig", {"languageId": "plaintext",
                                       "config": {"command": sys.executable, "args": [fake, "normal"]}})
        self.assert_not_trusted(s, {"languageId": "plaintext"})
        self.assertEqual(descendants(s.p.pid), [])
        s.call("workspace/trust", {"uri": "file://" + self.tmp, "trusted": True})
        self.assertTrue(s.call("lsp/start", {"languageId": "plaintext"})["ready"])
        running = descendants(s.p.pid)
        self.assertEqual(len(running), 1)
        # withdrawing another folder's trust leaves it
        other = os.path.join(self.tmp, "other")
        os.makedirs(other)
        s.call("workspace/trust", {"uri": "file://" + other, "trusted": False})
        self.assertEqual(s.call("lsp/status", {"languageId": "plaintext"})["servers"][0]["status"], "ready")
        s.call("workspace/trust", {"uri": "file://" + self.tmp, "trusted": False})
        self.assertEqual(wait_gone(running), [])
        self.assertEqual(s.call("lsp/status", {})["servers"], [])

    def test_a_document_from_an_untrusted_folder_is_kept_from_a_running_server(self):
        # clangd reads the compile_commands.json and .clangd beside each file it is sent: a file from a
        # folder nobody trusted must not reach it, though the server's own workspace is trusted.
        fake = os.path.join(HERE, "fake_server.py")
        log = os.path.join(self.tmp, "fake.log")
        outside = os.path.join(self.tmp, "cloned")
        os.makedirs(outside)
        write(os.path.join(outside, "b.txt"), "from elsewhere\n")
        write(os.path.join(self.ws, "a.txt"), "at home\n")
        s = self.start(args=["--trust-workspace"])
        s.call("lsp/setServerConfig", {"languageId": "plaintext",
                                       "config": {"command": sys.executable, "args": [fake, "normal", log]}})
        self.assertTrue(s.call("lsp/start", {"languageId": "plaintext"})["ready"])
        s.call("document/open", {"uri": "file://" + os.path.join(outside, "b.txt")})
        s.call("document/open", {"uri": "file://" + os.path.join(self.ws, "a.txt")})
        deadline = time.time() + 10
        sent = ""
        while time.time() < deadline and "a.txt" not in sent:
            time.sleep(0.05)
            sent = open(log).read() if os.path.exists(log) else ""
        self.assertIn("a.txt", sent)
        self.assertNotIn("b.txt", sent)
        self.assertNotIn("from elsewhere", sent)

    def test_a_crashed_server_waiting_for_its_restart_stays_down_once_untrusted(self):
        fake = os.path.join(HERE, "fake_server.py")
        s = self.start()
        s.call("workspace/trust", {"uri": "file://" + self.ws, "trusted": True})
        s.call("lsp/setServerConfig", {"languageId": "plaintext",
                                       "config": {"command": sys.executable, "args": [fake, "normal"]}})
        self.assertTrue(s.call("lsp/start", {"languageId": "plaintext"})["ready"])
        running = descendants(s.p.pid)
        self.assertEqual(len(running), 1)
        os.kill(running[0], 9)
        deadline = time.time() + 10
        while time.time() < deadline and not any(n.get("method") == "lsp/serverStatusChanged" and
                                                 n["params"]["status"] == "error" for n in s.notes):
            s.call("ecp/ping", [1])
            time.sleep(0.02)
        # the restart is 0.5 s away: withdrawing the trust now cancels it
        s.call("workspace/trust", {"uri": "file://" + self.ws, "trusted": False})
        time.sleep(1.5)
        s.call("ecp/ping", [1])
        self.assertEqual(wait_no_descendants(s.p.pid), [])
        self.assertEqual(s.call("lsp/status", {})["servers"], [])

    def test_relative_path_entries_are_not_searched(self):
        marks = []
        for where in (".", "bin"):
            mark = os.path.join(self.tmp, "ran-from-" + where)
            marks.append(mark)
            for name in ("clangd", "ecpd-test-shell"):
                write(os.path.join(self.ws, where, name), "#!/bin/sh\necho ran >> '%s'\nexec sleep 30\n" % mark,
                      executable=True)
        env = dict(os.environ, PATH=":.:bin:" + os.environ.get("PATH", "/usr/bin:/bin"))
        s = self.start(args=["--trust-workspace"], env=env, cwd=self.ws)
        result, error = s.request("lsp/start", {"languageId": "c"})
        if error:  # no clangd installed: not found, and the workspace's is not it
            self.assertEqual(error["code"], -32401, error)
        else:
            self.assertTrue(result["ready"])
        result, error = s.request("terminal/create", {"shell": "ecpd-test-shell"})
        self.assertIsNone(result)
        self.assertIn("ecpd-test-shell", error["message"])
        time.sleep(0.5)
        for mark in marks:
            self.assertFalse(os.path.exists(mark), "a program in %s ran" % mark)


    @unittest.skipUnless(os.path.exists(os.path.join(NODE_BIN, "pyright-langserver")), "third_party/node has no pyright")
    def test_a_server_looks_programs_up_on_absolute_path_entries_only(self):
        # pyright runs python3 from PATH in the folder it is rooted in; "." there is the workspace's
        write(os.path.join(self.ws, "python3"), "#!/bin/sh\necho ran >> '%s'\nexec '%s' \"$@\"\n"
              % (self.py_mark, sys.executable), executable=True)
        os.remove(os.path.join(self.ws, "pyrightconfig.json"))
        env = dict(os.environ, PATH=".:" + os.environ.get("PATH", "/usr/bin:/bin"))
        s = self.start(args=["--trust-workspace"], env=env, cwd=self.ws)
        s.call("lsp/setServerConfig", {"languageId": "python",
                                       "config": {"command": "pyright-langserver", "args": ["--stdio"]}})
        self.assertTrue(s.call("lsp/start", {"languageId": "python"})["ready"])
        uri = "file://" + os.path.join(self.ws, "a.py")
        s.call("document/open", {"uri": uri})
        deadline = time.time() + 30
        while time.time() < deadline and not any(n.get("method") == "lsp/didPublishDiagnostics" and
                                                 n["params"]["uri"] == uri for n in s.notes):
            s.call("ecp/ping", [1])
            time.sleep(0.1)
        self.assertFalse(os.path.exists(self.py_mark), "the workspace's python3 ran")


if __name__ == "__main__":
    ECPD = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
