#!/usr/bin/env python3
"""ecpd as installed: a prefix installed from the build tree, then moved, runs
without the checkout; its man pages render; the Debian package holds it all
with its Depends; the server takes a socket handed to it by socket
activation; bash completes ecpctl's methods.

usage: test_install.py SOURCE_DIR BUILD_DIR GRAMMAR_DIR TEST
TEST: options | relocated | man | deb | socket_activation | completion
"""
import fcntl
import glob
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time

SOURCE, BUILD, GRAMMARS = None, None, None
TIMEOUT = float(os.environ.get("INSTALL_TEST_TIMEOUT", "30"))
PROGRAMS = ("ecpd", "ecp-tui", "ecpctl")


class Failure(Exception):
    pass


def run(args, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    kw.setdefault("timeout", 300)
    return subprocess.run(args, **kw)


def check(args, **kw):
    done = run(args, **kw)
    if done.returncode != 0:
        raise Failure("%s: exit %d\n%s%s" % (" ".join(args), done.returncode, done.stdout, done.stderr))
    return done


def install(prefix):
    check(["cmake", "--install", BUILD, "--prefix", prefix])


def clean_env(home, path_dirs=()):
    """An environment that names nothing of the checkout: its own home, data and runtime directories."""
    env = {
        "HOME": home,
        "PATH": ":".join(list(path_dirs) + ["/usr/bin", "/bin"]),
        "XDG_DATA_HOME": os.path.join(home, "data"),
        "XDG_CONFIG_HOME": os.path.join(home, "config"),
        "XDG_RUNTIME_DIR": os.path.join(home, "run"),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
    }
    for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"):
        if k in os.environ:
            env[k] = os.environ[k]
    os.makedirs(env["XDG_RUNTIME_DIR"], mode=0o700, exist_ok=True)
    return env


def checkout_paths():
    """Every directory of the checkout a program could read data from, as given and resolved."""
    paths = {SOURCE, BUILD, GRAMMARS}
    for name in ("grammars", "node", "tree-sitter"):
        paths.add(os.path.join(SOURCE, "third_party", name))
    return sorted({os.path.realpath(p) for p in paths} | paths)


# ---- each program answers --help and --version on stdout, with status 0 ----

def test_options(tmp):
    binaries = {"ecpd": "server/ecpd", "ecp-tui": "clients/tui/ecp-tui", "ecpctl": "clients/cli/ecpctl"}
    for name, rel in binaries.items():
        for flag in ("--help", "--version"):
            done = run([os.path.join(BUILD, rel), flag], cwd=tmp, env=clean_env(tmp))
            if done.returncode != 0 or not done.stdout.strip() or done.stderr:
                raise Failure("%s %s: exit %d, stdout %r, stderr %r"
                              % (name, flag, done.returncode, done.stdout, done.stderr))
            if flag == "--version" and not re.match(r"%s \d+\.\d+\.\d+" % re.escape(name), done.stdout):
                raise Failure("%s --version printed %r" % (name, done.stdout))
    # the editor needs a terminal for its keys: without one it says so and stops (it used to crash)
    with open(os.devnull) as nothing:
        done = subprocess.run([os.path.join(BUILD, binaries["ecp-tui"]), "x.c"], cwd=tmp, env=clean_env(tmp),
                              stdin=nothing, capture_output=True, text=True, timeout=30)
    if done.returncode != 1 or "not a terminal" not in done.stderr:
        raise Failure("ecp-tui with /dev/null as input: exit %d, stderr %r" % (done.returncode, done.stderr))


# ---- a moved prefix runs without the checkout ----

class Screen:
    """One tmux server with one window running a command."""

    def __init__(self, command, cwd, env, cols=100, rows=24):
        self.dir = tempfile.mkdtemp(prefix="ecpd-install-tmux-")
        self.socket = os.path.join(self.dir, "tmux.sock")
        self.exit_file = os.path.join(self.dir, "exit")
        script = "%s; echo $? > %s; sleep 600" % (" ".join(shlex.quote(a) for a in command),
                                                  shlex.quote(self.exit_file))
        self.tmux("-f", "/dev/null", "new-session", "-d", "-x", str(cols), "-y", str(rows), "-c", cwd,
                  *sum((["-e", "%s=%s" % kv] for kv in env.items()), []), "sh", "-c", script,
                  ";", "set-option", "-g", "default-terminal", "tmux-256color")

    def tmux(self, *args):
        done = run(["tmux", "-S", self.socket] + list(args), timeout=60)
        if done.returncode != 0:
            raise Failure("tmux %s: exit %d: %s" % (" ".join(args[:2]), done.returncode, done.stderr.strip()))
        return done.stdout

    def wait(self, predicate, what):
        deadline = time.monotonic() + TIMEOUT
        while True:
            screen = self.tmux("capture-pane", "-p", "-e")
            if predicate(screen):
                return screen
            if os.path.exists(self.exit_file) or time.monotonic() > deadline:
                raise Failure("no %s; screen:\n%s" % (what, screen))
            time.sleep(0.05)

    def close(self):
        try:
            self.tmux("kill-server")
        except Failure:
            pass
        shutil.rmtree(self.dir, ignore_errors=True)


def colours_near(screen, needle):
    for line in screen.splitlines():
        at = line.find(needle)
        if at >= 0:
            return set(re.findall(r"38;[25];([0-9;]+)m", line[max(0, at - 40):]))
    return set()


def hide_checkout_command():
    """A command prefix that runs what follows with every directory of the checkout covered by an
    empty read-only tmpfs, in a mount namespace of its own; None where that cannot be made."""
    if not shutil.which("unshare") or run(["unshare", "-m", "true"]).returncode != 0:
        return None
    dirs = []
    for d in sorted(p for p in checkout_paths() if os.path.isdir(p) and os.path.realpath(p) == p):
        if not any(d == h or d.startswith(h + "/") for h in dirs):
            dirs.append(d)
    mounts = " && ".join("mount -t tmpfs -o ro tmpfs %s" % shlex.quote(d) for d in dirs)
    return ["unshare", "-m", "sh", "-c", mounts + ' && exec "$@"', "hide-checkout"]


def test_relocated(tmp):
    first, moved = os.path.join(tmp, "first"), os.path.join(tmp, "moved", "prefix")
    install(first)
    os.makedirs(os.path.dirname(moved))
    os.rename(first, moved)
    home = os.path.join(tmp, "home")
    os.makedirs(home)
    env = clean_env(home)
    reports = os.path.join(tmp, "sanitizer")
    os.makedirs(reports)
    for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS"):
        env[k] = env.get(k, "") + ":log_path=" + os.path.join(reports, k.split("_")[0].lower())
    done = check([os.path.join(moved, "bin", "ecpd"), "--version"], cwd=home, env=env)
    if not done.stdout.startswith("ecpd "):
        raise Failure("moved ecpd --version printed %r" % done.stdout)
    work = os.path.join(tmp, "work")
    os.makedirs(work)
    with open(os.path.join(work, "c.c"), "w") as f:
        f.write("int main(void) {\n    return 42;\n}\n")
    # Every file the editor and the server it starts look at, from a directory outside the checkout.
    trace = os.path.join(tmp, "trace")
    command = ["strace", "-f", "-qq", "-e", "trace=%file", "-o", trace,
               os.path.join(moved, "bin", "ecp-tui"), "c.c"]
    # Where a mount namespace may be made (root), the checkout is hidden under empty directories for
    # this run as well: then nothing of it can be read, whatever strace would have missed.
    hidden = hide_checkout_command()
    if hidden:
        command = hidden + command
    print("checkout %s for the moved install's run" % ("hidden" if hidden else "watched only"))
    screen = Screen(command, work, env)
    try:
        screen.wait(lambda s: len(colours_near(s, "return")) >= 3 and len(colours_near(s, "main")) >= 3,
                    "coloured keyword, type and function")
    finally:
        screen.close()
    text = "".join(open(os.path.join(reports, r), errors="replace").read() for r in os.listdir(reports))
    if text:
        raise Failure("sanitizer reports:\n" + text)
    with open(trace) as f:
        lines = f.read().splitlines()
    seen = [l for l in lines if any('"%s' % p in l for p in checkout_paths())]
    if seen:
        raise Failure("the moved install looked in the checkout:\n" + "\n".join(seen[:20]))
    queries = [l for l in lines if "/moved/prefix/share/ecpd/grammars/tree-sitter-c/queries/highlights.scm" in l]
    if not queries:
        raise Failure("the moved install never read its own C highlight query")


# ---- man pages render without warnings ----

def test_man(tmp):
    prefix = os.path.join(tmp, "p")
    install(prefix)
    pages = sorted(glob.glob(os.path.join(prefix, "share", "man", "man*", "*")))
    names = sorted(os.path.basename(p) for p in pages)
    if names != ["ecp-tui.1", "ecpctl.1", "ecpd-protocol.7", "ecpd.1"]:
        raise Failure("man pages installed: %s" % names)
    env = dict(os.environ, MANWIDTH="80", LANG="C.UTF-8")
    for page in pages:
        done = run(["man", "-l", page], env=env)
        if done.returncode != 0 or done.stderr or len(done.stdout) < 200:
            raise Failure("man -l %s: exit %d, warnings %r" % (page, done.returncode, done.stderr))
        # groff's own warnings, which man may not pass on: -ww makes them all heard
        done = run(["groff", "-ww", "-z", "-man", page])
        if done.returncode != 0 or done.stderr:
            raise Failure("groff -ww %s: %s" % (page, done.stderr))
    protocol = run(["man", "-l", os.path.join(prefix, "share", "man", "man7", "ecpd-protocol.7")], env=env).stdout
    # the method list is the tables': as many methods as a server lists
    methods = run([os.path.join(BUILD, "tests", "methods_markdown")]).stdout
    names = re.findall(r"^- `([^`]+)`", methods, re.M)
    missing = [n for n in names if not re.search(r"^\s+%s\b" % re.escape(n), protocol, re.M)]
    if len(names) < 100 or missing:
        raise Failure("ecpd-protocol(7) lacks %d of %d methods: %s" % (len(missing), len(names), missing[:10]))


# ---- the Debian package ----

def test_deb(tmp):
    out = os.path.join(tmp, "pkg")
    check(["cpack", "-G", "DEB", "-B", out, "--config", os.path.join(BUILD, "CPackConfig.cmake")], cwd=BUILD)
    debs = glob.glob(os.path.join(out, "ecpd_*_*.deb"))
    if len(debs) != 1 or not re.search(r"/ecpd_\d+\.\d+\.\d+_[a-z0-9]+\.deb$", debs[0]):
        raise Failure("packages made: %s" % os.listdir(out))
    deb = debs[0]
    info = check(["dpkg-deb", "-I", deb]).stdout
    depends = re.search(r"^ Depends: (.*)$", info, re.M)
    if not depends:
        raise Failure("no Depends:\n" + info)
    for lib in ("libgit2", "libuv1", "libncursesw6", "libsqlite3", "libcurl", "libpq5", "libsodium"):
        if lib not in depends.group(1):
            raise Failure("Depends lacks %s: %s" % (lib, depends.group(1)))
    for field in ("Maintainer:", "Section: editors", "Description:"):
        if field not in info:
            raise Failure("no %s in\n%s" % (field, info))
    listing = check(["dpkg-deb", "-c", deb]).stdout
    for path in ("./usr/bin/ecpd", "./usr/bin/ecp-tui", "./usr/bin/ecpctl",
                 "./usr/share/ecpd/grammars/tree-sitter-c/queries/highlights.scm",
                 "./usr/share/man/man1/ecpd.1", "./usr/share/man/man7/ecpd-protocol.7",
                 "./usr/share/bash-completion/completions/ecpctl",
                 "./usr/lib/systemd/user/ecpd.socket", "./usr/lib/systemd/user/ecpd.service"):
        if not re.search(r" %s$" % re.escape(path), listing, re.M):
            raise Failure("the package lacks %s:\n%s" % (path, listing))
    # Unpacked anywhere, it runs: the package's tree is a prefix like any other.
    root = os.path.join(tmp, "root")
    check(["dpkg-deb", "-x", deb, root])
    check([os.path.join(root, "usr", "bin", "ecpd"), "--version"])
    with open(os.path.join(root, "usr", "lib", "systemd", "user", "ecpd.service")) as f:
        unit = f.read()
    if "ExecStart=/usr/bin/ecpd --socket" not in unit:
        raise Failure("the packaged unit does not run /usr/bin/ecpd:\n" + unit)
    # apt would install it here: every dependency is satisfiable (simulated: the machine is shared).
    if shutil.which("apt-get"):
        done = run(["apt-get", "install", "-s", "-y", deb])
        if done.returncode != 0 or not re.search(r"^Inst ecpd ", done.stdout, re.M):
            raise Failure("apt-get install -s %s: exit %d\n%s%s" % (deb, done.returncode, done.stdout, done.stderr))


# ---- socket activation ----

def ping(ecpctl, sock, env, timeout=10):
    return run([ecpctl, "--socket", sock, "--timeout", str(timeout), "ecp/ping", '{"hello":1}'], env=env,
               timeout=timeout + 20)


def process_name(pid):
    try:
        with open("/proc/%d/comm" % pid) as f:
            return f.read().strip()
    except FileNotFoundError:
        return None


def test_socket_activation(tmp):
    if not shutil.which("systemd-socket-activate"):
        print("no systemd-socket-activate: skipped")
        sys.exit(77)
    env = clean_env(tmp)
    rundir = os.path.join(env["XDG_RUNTIME_DIR"], "ecpd")
    os.makedirs(rundir, mode=0o700)
    sock = os.path.join(rundir, "default.sock")
    ecpd = os.path.join(BUILD, "server", "ecpd")
    ecpctl = os.path.join(BUILD, "clients", "cli", "ecpctl")
    log = open(os.path.join(tmp, "activate.log"), "w+")
    # As ecpd.service does: --socket, the path only for the record.
    proc = subprocess.Popen(["systemd-socket-activate", "-l", sock, ecpd, "--socket", sock], env=env, cwd=tmp,
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + TIMEOUT
        while not os.path.exists(sock):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise Failure("systemd-socket-activate did not listen")
            time.sleep(0.02)
        time.sleep(0.2)
        if process_name(proc.pid) == "ecpd":
            raise Failure("ecpd started before any client came")
        done = ping(ecpctl, sock, env)
        log.seek(0)
        if done.returncode != 0 or '"hello":1' not in done.stdout:
            raise Failure("the first client got no answer: exit %d %s%s\nserver:\n%s"
                          % (done.returncode, done.stdout, done.stderr, log.read()))
        if process_name(proc.pid) != "ecpd":
            raise Failure("the answer did not come from the activated ecpd (%s)" % process_name(proc.pid))
        # A second client on the same server.
        done = ping(ecpctl, sock, env)
        if done.returncode != 0:
            raise Failure("a second client got no answer: %s" % done.stderr)
        check([ecpctl, "--socket", sock, "--stop"], env=env)
        if proc.wait(timeout=TIMEOUT) != 0:
            log.seek(0)
            raise Failure("the activated server stopped with status %d:\n%s" % (proc.returncode, log.read()))
        # The socket is systemd's: the server that stops leaves it for the next start.
        if not os.path.exists(sock):
            raise Failure("the activated server removed the socket it was handed")
        log.seek(0)
        text = log.read()
        if "socket activation" not in text:
            raise Failure("the server did not say it was activated:\n" + text)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()
    # Handed something that is not a listening socket, the server refuses to start.
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as unbound:
        fd = fcntl.fcntl(unbound.fileno(), fcntl.F_DUPFD, 7)  # one digit: dash reads no more
        try:
            done = run(["sh", "-c", 'exec 3<&%d %d<&-; LISTEN_PID=$$ LISTEN_FDS=1 exec "$0" --socket' % (fd, fd), ecpd],
                       env=env, pass_fds=(fd,), timeout=30)
        finally:
            os.close(fd)
    if done.returncode != 1 or "listening" not in done.stderr:
        raise Failure("ecpd handed an unbound socket: exit %d, %r" % (done.returncode, done.stderr))


# ---- bash completion ----

def complete(completion, words, env, cwd):
    script = ('source %s; COMP_WORDS=(%s); COMP_CWORD=%d; COMP_LINE="${COMP_WORDS[*]}"; COMP_POINT=${#COMP_LINE}; '
              'fn=$(complete -p %s | sed "s/.*-F \\([^ ]*\\) .*/\\1/"); $fn; printf "%%s\\n" "${COMPREPLY[@]}"'
              % (shlex.quote(completion), " ".join(shlex.quote(w) for w in words), len(words) - 1,
                 shlex.quote(words[0])))
    done = check(["bash", "-c", script], env=env, cwd=cwd)
    return [l for l in done.stdout.splitlines() if l]


def test_completion(tmp):
    prefix = os.path.join(tmp, "p")
    install(prefix)
    completions = os.path.join(prefix, "share", "bash-completion", "completions")
    env = clean_env(tmp, [os.path.join(prefix, "bin")])
    for program in PROGRAMS:
        if not os.path.exists(os.path.join(completions, program)):
            raise Failure("no completion for %s" % program)
    # No server runs: the names come from the method tables.
    got = complete(os.path.join(completions, "ecpctl"), ["ecpctl", "doc"], env, tmp)
    if "document/open" not in got or "document/insert" not in got or any(not g.startswith("document/") for g in got):
        raise Failure("ecpctl doc<TAB> gave %s" % got)
    got = complete(os.path.join(completions, "ecpctl"), ["ecpctl", "--methods", "te"], env, tmp)
    if got != ["terminal"]:
        raise Failure("ecpctl --methods te<TAB> gave %s" % got)
    got = complete(os.path.join(completions, "ecpctl"), ["ecpctl", "--so"], env, tmp)
    if got != ["--socket"]:
        raise Failure("ecpctl --so<TAB> gave %s" % got)
    got = complete(os.path.join(completions, "ecpctl"), ["ecpctl", "ecp/ping", ""], env, tmp)
    if got:
        raise Failure("after the method, completion offered %s" % got[:5])
    got = complete(os.path.join(completions, "ecpd"), ["ecpd", "--log-level", "d"], env, tmp)
    if got != ["debug"]:
        raise Failure("ecpd --log-level d<TAB> gave %s" % got)
    got = complete(os.path.join(completions, "ecp-tui"), ["ecp-tui", "--con"], env, tmp)
    if got != ["--connect"]:
        raise Failure("ecp-tui --con<TAB> gave %s" % got)
    # The server the command line names is asked first: an ecpctl whose server knows one more method.
    fake_bin = os.path.join(tmp, "fake-bin")
    os.makedirs(fake_bin)
    with open(os.path.join(fake_bin, "ecpctl"), "w") as f:
        f.write('#!/bin/sh\ncase "$*" in *"--socket S --timeout 2 --methods"*) '
                'echo "document/fromServer  {}  -- a method only this server has";; *) exit 2;; esac\n')
    os.chmod(os.path.join(fake_bin, "ecpctl"), 0o755)
    fake_env = clean_env(tmp, [fake_bin])
    got = complete(os.path.join(completions, "ecpctl"), ["ecpctl", "--socket", "S", "document/f"], fake_env, tmp)
    if got != ["document/fromServer"]:
        raise Failure("with a server, ecpctl --socket S document/f<TAB> gave %s" % got)
    # And the real one's --methods reads as the completion expects.
    sock = os.path.join(tmp, "s.sock")
    server = subprocess.Popen([os.path.join(prefix, "bin", "ecpd"), "--socket", sock], env=env, cwd=tmp,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + TIMEOUT
        while not os.path.exists(sock) and time.monotonic() < deadline:
            time.sleep(0.02)
        got = complete(os.path.join(completions, "ecpctl"), ["ecpctl", "--socket", sock, "doc"], env, tmp)
        if "document/open" not in got or any(not g.startswith("document/") for g in got):
            raise Failure("with a server, ecpctl --socket S doc<TAB> gave %s" % got)
    finally:
        server.terminate()
        server.wait(timeout=30)


TESTS = {
    "options": test_options,
    "relocated": test_relocated,
    "man": test_man,
    "deb": test_deb,
    "socket_activation": test_socket_activation,
    "completion": test_completion,
}


def main():
    global SOURCE, BUILD, GRAMMARS
    if len(sys.argv) != 5 or sys.argv[4] not in TESTS:
        print(__doc__, file=sys.stderr)
        return 2
    SOURCE, BUILD, GRAMMARS = (os.path.abspath(a) for a in sys.argv[1:4])
    tmp = tempfile.mkdtemp(prefix="ecpd-install-")
    try:
        TESTS[sys.argv[4]](tmp)
    except Failure as e:
        print("FAIL %s: %s" % (sys.argv[4], e))
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("ok %s" % sys.argv[4])
    return 0


if __name__ == "__main__":
    sys.exit(main())
