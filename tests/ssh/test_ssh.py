#!/usr/bin/env python3
"""Editing over ssh, against a real OpenSSH server on 127.0.0.1: a private
sshd (its own host key, config, port and authorized key), a client config
given with -F (its own known hosts, accept-new), and the built ecpd named
with --ssh-ecpd. ecp-tui runs in tmux through tests/tui/test_tui.py's Screen.

usage: test_ssh.py ECPD ECPCTL ECP_TUI [TEST ...]
"""
import glob
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tui"))
import test_tui  # noqa: E402
from test_tui import Failure, Screen  # noqa: E402

ECPD = ECPCTL = None
TIMEOUT = float(os.environ.get("TUI_TEST_TIMEOUT", "15"))
# A missing remote ecpd is told at once (about half a second on an idle machine); the bound leaves a
# loaded machine room for ssh's own start while still catching a wait for a timeout.
FEW_SECONDS = 10


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Sshd:
    """sshd -D on 127.0.0.1 for this user, and a client config that reaches it."""

    def __init__(self, root):
        self.dir = os.path.join(root, "ssh")
        os.mkdir(self.dir, 0o700)
        self.port = free_port()
        # what the remote side's ecpd keeps (data, settings, its socket) stays in the test
        self.remote_env = {
            "XDG_DATA_HOME": os.path.join(root, "remote-data"),
            "XDG_CONFIG_HOME": os.path.join(root, "remote-config"),
            "XDG_RUNTIME_DIR": os.path.join(root, "remote-run"),
        }
        os.mkdir(self.remote_env["XDG_RUNTIME_DIR"], 0o700)
        # the remote ecpd's sanitizer reports are read at the end (its stderr is ssh's, read by the clients)
        self.sanitizer_dir = os.path.join(root, "remote-sanitizer")
        os.mkdir(self.sanitizer_dir)
        for name, prefix in (("ASAN_OPTIONS", "asan"), ("UBSAN_OPTIONS", "ubsan")):
            self.remote_env[name] = "%s:log_path=%s" % (os.environ.get(name, ""),
                                                        os.path.join(self.sanitizer_dir, prefix))
        host_key = os.path.join(self.dir, "host_ed25519")
        self.user_key = os.path.join(self.dir, "id_ed25519")
        for key in (host_key, self.user_key):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key], check=True)
        shutil.copy(self.user_key + ".pub", os.path.join(self.dir, "authorized_keys"))
        # privilege separation wants its empty directory, as the Debian service makes it
        try:
            os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
        except PermissionError:
            pass
        config = os.path.join(self.dir, "sshd_config")
        with open(config, "w") as f:
            f.write("\n".join([
                "ListenAddress 127.0.0.1",
                "HostKey " + host_key,
                "AuthorizedKeysFile " + os.path.join(self.dir, "authorized_keys"),
                "PidFile " + os.path.join(self.dir, "sshd.pid"),
                "StrictModes no",
                "UsePAM no",
                "PasswordAuthentication no",
                "KbdInteractiveAuthentication no",
                "PubkeyAuthentication yes",
                "PermitRootLogin prohibit-password",
                "AllowStreamLocalForwarding yes",
                "AcceptEnv " + " ".join(sorted(self.remote_env)),
                "LogLevel ERROR",
                ""]))
        self.log = open(os.path.join(self.dir, "sshd.log"), "w")
        self.process = subprocess.Popen(["/usr/sbin/sshd", "-D", "-e", "-f", config, "-p", str(self.port)],
                                        stdout=self.log, stderr=self.log)
        self.client_config = os.path.join(self.dir, "config")
        self.write_client_config(self.client_config, self.port)
        deadline = time.monotonic() + TIMEOUT
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise Failure("sshd did not start: " + open(self.log.name).read())
                time.sleep(0.05)

    def write_client_config(self, path, port, key=None):
        with open(path, "w") as f:
            f.write("\n".join([
                "Host *",
                "  Port %d" % port,
                "  IdentityFile " + (key or self.user_key),
                "  IdentitiesOnly yes",
                "  UserKnownHostsFile " + os.path.join(self.dir, "known_hosts"),
                "  StrictHostKeyChecking accept-new",
                "  BatchMode yes",
                "  ConnectTimeout 5",
                "  SetEnv " + " ".join("%s=%s" % kv for kv in sorted(self.remote_env.items())),
                "  LogLevel ERROR",
                ""]))

    def ssh_args(self):
        return ["--ssh-option", "-F" + self.client_config]

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait()
        self.log.close()


def ecpctl(*args, env=None, timeout=TIMEOUT * 2):
    return subprocess.run([ECPCTL, *args], capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, **(env or {})))


class LineClient:
    """One JSON-per-line connection to a socket server."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(path)
        self.sock.settimeout(TIMEOUT)
        self.pending = b""
        self.next_id = 0

    def call(self, method, params):
        self.next_id += 1
        self.sock.sendall((json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method,
                                       "params": params}) + "\n").encode())
        while True:
            while b"\n" not in self.pending:
                chunk = self.sock.recv(65536)
                if not chunk:
                    raise Failure("the server closed the connection")
                self.pending += chunk
            line, self.pending = self.pending.split(b"\n", 1)
            msg = json.loads(line)
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    raise Failure("%s: %s" % (method, msg["error"]))
                return msg["result"]

    def close(self):
        self.sock.close()


def children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(p) for p in f.read().split()]
    except FileNotFoundError:
        return []


def comm(pid):
    try:
        with open("/proc/%d/comm" % pid) as f:
            return f.read().strip()
    except FileNotFoundError:
        return None


def tui_ssh_children(screen):
    pid = test_tui.tui_pid(screen)
    if pid is None:
        raise Failure("no ecp-tui process")
    return [c for c in children(pid) if comm(c) == "ssh"]


# ---- the tests ----

def test_ecpctl_ping(sshd, work):
    done = ecpctl("--ssh", "127.0.0.1:" + work, *sshd.ssh_args(), "--ssh-ecpd", ECPD, "ecp/ping", '{"hello":1}')
    if done.returncode != 0 or '"result"' not in done.stdout:
        raise Failure("ecpctl --ssh: exit %d\n%s%s" % (done.returncode, done.stdout, done.stderr))
    # the same through $ECP_SSH_OPTIONS
    done = ecpctl("--ssh", "127.0.0.1:" + work, "--ssh-ecpd", ECPD, "ecp/ping",
                  env={"ECP_SSH_OPTIONS": "-F " + sshd.client_config})
    if done.returncode != 0 or '"result"' not in done.stdout:
        raise Failure("ECP_SSH_OPTIONS: exit %d\n%s%s" % (done.returncode, done.stdout, done.stderr))


def test_missing_remote_ecpd(sshd, work):
    start = time.monotonic()
    done = ecpctl("--ssh", "127.0.0.1:" + work, *sshd.ssh_args(), "--ssh-ecpd", "/nonexistent", "ecp/ping")
    took = time.monotonic() - start
    if done.returncode != 2 or "is not installed on 127.0.0.1" not in done.stderr or "--ssh-ecpd PATH" not in done.stderr:
        raise Failure("ecpctl: exit %d, stderr:\n%s" % (done.returncode, done.stderr))
    if took > FEW_SECONDS:
        raise Failure("ecpctl took %.1f s to say ecpd is missing" % took)
    # the editor says it on the terminal and exits 1, before it takes the screen
    start = time.monotonic()
    done = subprocess.run([test_tui.TUI, "--ssh", "127.0.0.1:" + work, *sshd.ssh_args(), "--ssh-ecpd", "/nonexistent"],
                          capture_output=True, text=True, timeout=TIMEOUT * 2, stdin=subprocess.DEVNULL)
    took = time.monotonic() - start
    if done.returncode != 1 or "is not installed on 127.0.0.1" not in done.stderr:
        raise Failure("ecp-tui: exit %d, stderr:\n%s" % (done.returncode, done.stderr))
    if took > FEW_SECONDS:
        raise Failure("ecp-tui took %.1f s to say ecpd is missing" % took)
    # and with --connect, where the remote ecpd is asked for its socket first
    done = subprocess.run([test_tui.TUI, "--ssh", "127.0.0.1:" + work, "--connect", *sshd.ssh_args(),
                           "--ssh-ecpd", "/nonexistent"],
                          capture_output=True, text=True, timeout=TIMEOUT * 2, stdin=subprocess.DEVNULL)
    if done.returncode != 1 or "is not installed on 127.0.0.1" not in done.stderr:
        raise Failure("ecp-tui --connect: exit %d, stderr:\n%s" % (done.returncode, done.stderr))


def test_unreachable_host(sshd, work):
    # a port nobody listens on: ssh's own words, and exit 1 (ecpctl: 2, its connection problem)
    config = os.path.join(work, "closed-port-config")
    sshd.write_client_config(config, free_port())
    done = subprocess.run([test_tui.TUI, "--ssh", "127.0.0.1:" + work, "--ssh-option", "-F" + config,
                           "--ssh-ecpd", ECPD], capture_output=True, text=True, timeout=TIMEOUT * 2,
                          stdin=subprocess.DEVNULL)
    if done.returncode != 1 or "Connection refused" not in done.stderr:
        raise Failure("ecp-tui: exit %d, stderr:\n%s" % (done.returncode, done.stderr))
    done = ecpctl("--ssh", "127.0.0.1:" + work, "--ssh-option", "-F" + config, "--ssh-ecpd", ECPD, "ecp/ping")
    if done.returncode != 2 or "Connection refused" not in done.stderr:
        raise Failure("ecpctl: exit %d, stderr:\n%s" % (done.returncode, done.stderr))
    # a key the server does not know: ssh's refusal
    stranger = os.path.join(work, "stranger")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", stranger], check=True)
    sshd.write_client_config(config, sshd.port, key=stranger)
    done = subprocess.run([test_tui.TUI, "--ssh", "127.0.0.1:" + work, "--ssh-option", "-F" + config,
                           "--ssh-ecpd", ECPD], capture_output=True, text=True, timeout=TIMEOUT * 2,
                          stdin=subprocess.DEVNULL)
    if done.returncode != 1 or "Permission denied" not in done.stderr:
        raise Failure("ecp-tui with a stranger's key: exit %d, stderr:\n%s" % (done.returncode, done.stderr))


def answer_trust(s):
    """A C file in a new folder asks whether to trust it (its language server would run): no."""
    s.wait_for("Trust this folder?")
    s.type("n")
    s.wait(lambda t: "Trust this folder?" not in t, "the question answered")


def edit_c_file(sshd, workspace, extra_args=()):
    path = os.path.join(workspace, "main.c")
    with open(path, "w") as f:
        f.write("int main(void)\n{\n    return 0;\n}\n")
    s = Screen(["--ssh", "127.0.0.1:" + workspace, *sshd.ssh_args(), "--ssh-ecpd", ECPD, *extra_args, "main.c"],
               workspace)
    try:
        s.wait_for("return 0;")
        answer_trust(s)
        s.type("/* over ssh */ ")
        s.wait_for("/* over ssh */ int main(void)")
        s.keys("C-s")
        s.wait_for("Saved")
        with open(path) as f:
            got = f.read()
        if got != "/* over ssh */ int main(void)\n{\n    return 0;\n}\n":
            raise Failure("file on disk: %r" % got)
        s.keys("C-q")
        if s.wait_exit() != "0":
            raise Failure("exit status " + s.exited())
    finally:
        s.close()


def test_tui_edits_over_ssh(sshd, work):
    edit_c_file(sshd, work)


def test_path_with_space_and_command(sshd, work):
    # the remote shell sees the path quoted: the space and the quotes stay, and $(...) runs nothing
    # (it would run in the remote login directory)
    marker = "ecp-ssh-ran-%d" % os.getpid()
    marker_path = os.path.join(pwd.getpwuid(os.getuid()).pw_dir, marker)
    workspace = os.path.join(work, "my ws 'q' \"d\" $(touch %s)" % marker)
    os.mkdir(workspace)
    edit_c_file(sshd, workspace)
    # the remote server's workspace is the path as written: its socket is the one that path names
    done = ecpctl("--ssh", "127.0.0.1:" + workspace, "--connect", *sshd.ssh_args(), "--ssh-ecpd", ECPD, "ecp/ping")
    remote_sock = remote_socket_path(sshd, workspace)
    if done.returncode != 0 or not os.path.exists(remote_sock):
        raise Failure("ecpctl --connect: exit %d, no %s\n%s" % (done.returncode, remote_sock, done.stderr))
    subprocess.run([ECPCTL, "--socket", remote_sock, "--stop"], capture_output=True, timeout=TIMEOUT)
    done = ecpctl("--ssh", "127.0.0.1:" + workspace, *sshd.ssh_args(), "--ssh-ecpd", ECPD, "document/open",
                  json.dumps({"uri": "file://" + os.path.join(workspace, "main.c").replace(" ", "%20")}))
    if done.returncode != 0 or '"documentId"' not in done.stdout:
        raise Failure("ecpctl in the workspace: exit %d\n%s%s" % (done.returncode, done.stdout, done.stderr))
    if os.path.exists(marker_path):
        os.unlink(marker_path)
        raise Failure("the remote shell ran the $(...) in the path")


def remote_socket_path(sshd, workspace):
    env = dict(os.environ, XDG_RUNTIME_DIR=sshd.remote_env["XDG_RUNTIME_DIR"])
    return subprocess.run([ECPD, "--print-socket-path", "--workspace", workspace], capture_output=True, text=True,
                          env=env, check=True).stdout.strip()


def test_connect_through_forwarded_socket(sshd, work):
    path = os.path.join(work, "shared.c")
    with open(path, "w") as f:
        f.write("int shared;\n")
    remote_sock = remote_socket_path(sshd, work)
    s = Screen(["--ssh", "127.0.0.1:" + work, "--connect", *sshd.ssh_args(), "--ssh-ecpd", ECPD, "shared.c"], work)
    local = None
    try:
        s.wait_for("int shared;")
        answer_trust(s)
        if not os.path.exists(remote_sock):
            raise Failure("no socket server at %s on the remote side" % remote_sock)
        forwarders = tui_ssh_children(s)
        if len(forwarders) != 1:
            raise Failure("expected one ssh forwarder, found %r" % forwarders)
        s.type("/* forwarded */ ")
        s.wait_for("/* forwarded */ int shared;")
        # a client on the real socket, on the remote side, sees the unsaved edit
        local = LineClient(remote_sock)
        doc = local.call("document/open", {"uri": "file://" + path})
        deadline = time.monotonic() + TIMEOUT
        while True:
            content = local.call("document/content", {"documentId": doc["documentId"]})
            if content.get("content", "").startswith("/* forwarded */ int shared;"):
                break
            if time.monotonic() > deadline:
                raise Failure("the socket server has %r" % content)
            time.sleep(0.05)
        # the forwarder dies: the editor runs another and carries on where it was
        killed = forwarders[0]
        os.kill(killed, signal.SIGKILL)
        deadline = time.monotonic() + TIMEOUT
        while True:
            forwarders = tui_ssh_children(s)
            if len(forwarders) == 1 and forwarders[0] != killed and "The server is back" in s.text():
                break
            if time.monotonic() > deadline:
                raise Failure("no new forwarder; screen:\n" + s.text())
            time.sleep(0.05)
        s.type("again ")
        deadline = time.monotonic() + TIMEOUT
        while True:
            content = local.call("document/content", {"documentId": doc["documentId"]})
            if "again " in content.get("content", ""):
                break
            if time.monotonic() > deadline:
                raise Failure("after the new forwarder the socket server has %r; screen:\n%s" % (content, s.text()))
            time.sleep(0.05)
        s.keys("C-s")
        s.wait_for("Saved")
        s.keys("C-q")
        if s.wait_exit() != "0":
            raise Failure("exit status " + s.exited())
        # the forwarder ends with the editor, its private directory gone
        deadline = time.monotonic() + TIMEOUT
        while any(comm(p) == "ssh" for p in forwarders):
            if time.monotonic() > deadline:
                raise Failure("the ssh forwarder outlived the editor")
            time.sleep(0.05)
        # the shared server stays for the others, and ecpctl --ssh --connect finds it answering
        local.call("ecp/ping", {})
        done = ecpctl("--ssh", "127.0.0.1:" + work, "--connect", *sshd.ssh_args(), "--ssh-ecpd", ECPD,
                      "document/content", json.dumps({"documentId": doc["documentId"]}))
        if done.returncode != 0 or "again " not in done.stdout:
            raise Failure("ecpctl --ssh --connect: exit %d\n%s%s" % (done.returncode, done.stdout, done.stderr))
    finally:
        if local:
            local.close()
        s.close()
        subprocess.run([ECPCTL, "--socket", remote_sock, "--stop"], capture_output=True, timeout=TIMEOUT)
    with open(path) as f:
        got = f.read()
        if not got.startswith("/* forwarded */ ") or "again " not in got:
            raise Failure("file on disk: %r" % got)
    # ecpctl --ssh --connect reaches the same kind of server (started again here, none answering)
    done = ecpctl("--ssh", "127.0.0.1:" + work, "--connect", *sshd.ssh_args(), "--ssh-ecpd", ECPD, "ecp/ping")
    if done.returncode != 0 or '"result"' not in done.stdout:
        raise Failure("ecpctl --ssh --connect: exit %d\n%s%s" % (done.returncode, done.stdout, done.stderr))
    subprocess.run([ECPCTL, "--socket", remote_sock, "--stop"], capture_output=True, timeout=TIMEOUT)


def test_forwarder_ends_with_a_killed_editor(sshd, work):
    path = os.path.join(work, "k.c")
    with open(path, "w") as f:
        f.write("int k;\n")
    remote_sock = remote_socket_path(sshd, work)
    s = Screen(["--ssh", "127.0.0.1:" + work, "--connect", *sshd.ssh_args(), "--ssh-ecpd", ECPD, "k.c"], work)
    try:
        s.wait_for("int k;")
        forwarders = tui_ssh_children(s)
        if len(forwarders) != 1:
            raise Failure("expected one ssh forwarder, found %r" % forwarders)
        killed = test_tui.tui_pid(s)
        runtime = os.environ.get("XDG_RUNTIME_DIR", "")
        private = glob.glob(os.path.join(runtime if runtime.startswith("/") else "/tmp", "ecp-ssh-%d-*" % killed))
        if len(private) != 1:
            raise Failure("expected the editor's one private directory, found %r" % private)
        os.kill(killed, signal.SIGKILL)
        deadline = time.monotonic() + TIMEOUT
        while comm(forwarders[0]) == "ssh":
            if time.monotonic() > deadline:
                os.kill(forwarders[0], signal.SIGTERM)
                raise Failure("the ssh forwarder outlived a killed editor")
            time.sleep(0.05)
        # the killed editor could not remove its private directory; the next forwarding client does
        if not os.path.isdir(private[0]):
            raise Failure("the killed editor's private directory is already gone")
        done = ecpctl("--ssh", "127.0.0.1:" + work, "--connect", *sshd.ssh_args(), "--ssh-ecpd", ECPD, "ecp/ping")
        if done.returncode != 0:
            raise Failure("ecpctl --ssh --connect: exit %d\n%s%s" % (done.returncode, done.stdout, done.stderr))
        if os.path.exists(private[0]):
            raise Failure("the killed editor's private directory %s outlived the next client" % private[0])
    finally:
        s.close()
        subprocess.run([ECPCTL, "--socket", remote_sock, "--stop"], capture_output=True, timeout=TIMEOUT)


def test_ssh_killed_mid_session(sshd, work):
    path = os.path.join(work, "lost.c")
    with open(path, "w") as f:
        f.write("int lost;\n")
    s = Screen(["--ssh", "127.0.0.1:" + work, *sshd.ssh_args(), "--ssh-ecpd", ECPD, "lost.c"], work)
    try:
        s.wait_for("int lost;")
        answer_trust(s)
        ssh = tui_ssh_children(s)
        if len(ssh) != 1:
            raise Failure("expected one ssh child, found %r" % ssh)
        os.kill(ssh[0], signal.SIGKILL)
        s.wait_for("connection to 127.0.0.1 was lost")
        if s.exited() is not None:
            raise Failure("ecp-tui exited")
        # it still answers keys: Ctrl+S brings the server back over a new ssh
        s.keys("C-s")
        s.wait(lambda t: "was lost" not in t and len(tui_ssh_children(s)) == 1, "a new ssh")
        s.keys("C-q")
        if s.wait_exit() != "0":
            raise Failure("exit status " + s.exited())
    finally:
        s.close()


TESTS = [test_ecpctl_ping, test_missing_remote_ecpd, test_unreachable_host, test_tui_edits_over_ssh,
         test_path_with_space_and_command, test_connect_through_forwarded_socket, test_forwarder_ends_with_a_killed_editor,
         test_ssh_killed_mid_session]


def main():
    global ECPD, ECPCTL
    ECPD, ECPCTL = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    test_tui.TUI = os.path.abspath(sys.argv[3])
    wanted = sys.argv[4:]
    root = tempfile.mkdtemp(prefix="ecp-ssh-test-")
    failed = 0
    sshd = Sshd(root)
    try:
        for test in TESTS:
            if wanted and test.__name__ not in wanted and test.__name__[5:] not in wanted:
                continue
            work = tempfile.mkdtemp(prefix="work-", dir=root)
            start = time.monotonic()
            try:
                test(sshd, work)
                print("ok   %-40s %.2fs" % (test.__name__, time.monotonic() - start), flush=True)
            except Failure as e:
                failed += 1
                print("FAIL %-40s %s" % (test.__name__, e), flush=True)
        reports = sorted(os.listdir(sshd.sanitizer_dir))
        if reports:
            failed += 1
            print("FAIL the remote ecpd's sanitizer reports:\n" + "".join(
                open(os.path.join(sshd.sanitizer_dir, r), errors="replace").read() for r in reports))
    finally:
        sshd.stop()
        if failed:
            print("sshd log:\n" + open(sshd.log.name).read())
        shutil.rmtree(root, ignore_errors=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
