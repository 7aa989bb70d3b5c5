#!/usr/bin/env python3
"""ecp-tui in a real terminal: each test runs the editor in its own tmux
server, sends keys with send-keys and reads the screen (with its colours)
with capture-pane, waiting for what it expects rather than sleeping.

usage: test_tui.py ECP_TUI [TEST ...]
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "agent"))

TUI = None
TIMEOUT = float(os.environ.get("TUI_TEST_TIMEOUT", "15"))


class Failure(Exception):
    pass


class Screen:
    """One tmux server, one window running ecp-tui."""

    def __init__(self, args, cwd, cols=100, rows=24, env=None):
        self.dir = tempfile.mkdtemp(prefix="ecp-tui-test-")
        self.socket = os.path.join(self.dir, "tmux.sock")
        self.exit_file = os.path.join(self.dir, "exit")
        self.sanitizer_dir = os.path.join(self.dir, "sanitizer")
        os.mkdir(self.sanitizer_dir)
        environment = {
            "XDG_DATA_HOME": os.path.join(self.dir, "data"),
            "XDG_CONFIG_HOME": os.path.join(self.dir, "config"),
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "HOME": self.dir,
            "PS1": "$ ",
            "SHELL": "/bin/sh",
            "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") + ":log_path=" + self.sanitizer_dir + "/asan",
            "UBSAN_OPTIONS": os.environ.get("UBSAN_OPTIONS", "") + ":log_path=" + self.sanitizer_dir + "/ubsan",
        }
        environment.update(env or {})
        command = " ".join(shlex_quote(a) for a in [TUI, "--server-log", os.path.join(self.dir, "server.log")] + args)
        # tmux sets the pane's TERM itself: a test's own goes in the command.
        exports = "".join("export %s=%s; " % (k, shlex_quote(env[k])) for k in ("TERM", "COLORTERM") if env and k in env)
        script = "%s%s; echo $? > %s; sleep 600" % (exports, command, shlex_quote(self.exit_file))
        # One tmux command makes the session and sets its options: a second client connecting right
        # after the first has, under load, met a tmux server that had just exited
        # ("server exited unexpectedly"); that is tmux's own start, so it is tried once more.
        start = ["-f", "/dev/null", "new-session", "-d", "-x", str(cols), "-y", str(rows), "-c", cwd,
                 *sum((["-e", "%s=%s" % kv] for kv in environment.items()), []), "sh", "-c", script,
                 ";", "set-option", "-g", "default-terminal", "tmux-256color",
                 ";", "set-option", "-g", "escape-time", "0"]
        try:
            self.tmux(*start)
        except Failure as e:
            if "server exited unexpectedly" not in str(e) or os.path.exists(self.exit_file):
                raise
            self.tmux(*start)

    def tmux(self, *args):
        done = subprocess.run(["tmux", "-S", self.socket] + list(args), capture_output=True, text=True)
        if done.returncode != 0:
            raise Failure("tmux %s: exit %d: %s" % (" ".join(args[:2]), done.returncode, done.stderr.strip()))
        return done.stdout

    def keys(self, *keys, literal=False):
        self.tmux("send-keys", *(["-l"] if literal else []), *keys)

    def type(self, text):
        self.keys(text, literal=True)

    def text(self):
        return self.tmux("capture-pane", "-p")

    def colored(self):
        return self.tmux("capture-pane", "-p", "-e")

    def wait(self, predicate, what, colored=False):
        deadline = time.monotonic() + TIMEOUT
        while True:
            screen = self.colored() if colored else self.text()
            if predicate(screen):
                return screen
            if self.exited() is not None and not predicate(screen):
                raise Failure("ecp-tui exited (%s) while waiting for %s; screen:\n%s" % (self.exited(), what, screen))
            if time.monotonic() > deadline:
                raise Failure("timed out waiting for %s; screen:\n%s" % (what, screen))
            time.sleep(0.01)

    def wait_for(self, text, colored=False):
        return self.wait(lambda s: text in s, repr(text), colored)

    def exited(self):
        try:
            with open(self.exit_file) as f:
                return f.read().strip() or None
        except FileNotFoundError:
            return None

    def wait_exit(self):
        deadline = time.monotonic() + TIMEOUT
        while self.exited() is None:
            if time.monotonic() > deadline:
                raise Failure("ecp-tui did not exit; screen:\n" + self.text())
            time.sleep(0.01)
        return self.exited()

    def close(self):
        try:
            self.tmux("kill-server")
        except Failure:
            pass
        reports = [os.path.join(self.sanitizer_dir, f) for f in os.listdir(self.sanitizer_dir)]
        text = "".join(open(r, errors="replace").read() for r in reports)
        # The server may still be writing its data directory as it goes: remove until gone.
        deadline = time.monotonic() + 5
        while os.path.exists(self.dir) and time.monotonic() < deadline:
            shutil.rmtree(self.dir, ignore_errors=True)
            if os.path.exists(self.dir):
                time.sleep(0.05)
        if text:
            raise Failure("sanitizer reports:\n" + text)


def shlex_quote(s):
    import shlex
    return shlex.quote(s)


def line_of(screen, needle):
    for line in screen.splitlines():
        if needle in line:
            return line
    return None


def go_to(s, line, column):
    """Ctrl+G to a line and column, waiting until the status line shows the caret there."""
    s.keys("C-g")
    s.type("%d:%d" % (line, column))
    s.keys("Enter")
    s.wait(lambda t: "Ln %d, Col %d" % (line, column) in status_line(t), "the caret at %d:%d" % (line, column))


def status_line(screen):
    lines = screen.rstrip("\n").splitlines()
    return lines[-1] if lines else ""


# ---- the tests ----

def test_type_undo_save(work):
    path = os.path.join(work, "notes.txt")
    with open(path, "w") as f:
        f.write("first line\nsecond line\n")
    s = Screen([path], work)
    try:
        s.wait_for("second line")
        s.type("Hello, ")
        s.wait_for("Hello, first line")
        s.keys("C-z")
        s.wait(lambda t: "Hello" not in t and "first line" in t, "the undo")
        s.keys("Down", "End")
        s.type(" wide:日本 é")
        s.wait_for("second line wide:日本 é")
        s.keys("C-s")
        s.wait_for("Saved")
        with open(path, encoding="utf-8") as f:
            got = f.read()
        if got != "first line\nsecond line wide:日本 é\n":
            raise Failure("file on disk: %r" % got)
        s.keys("C-q")
        if s.wait_exit() != "0":
            raise Failure("exit status " + s.exited())
    finally:
        s.close()


def test_multi_cursor(work):
    path = os.path.join(work, "m.txt")
    with open(path, "w") as f:
        f.write("foo bar foo baz foo\nalpha\nbeta\n")
    s = Screen([path], work)
    try:
        s.wait_for("foo bar foo baz foo")
        s.keys("C-d")  # selects the word under the cursor
        s.keys("C-d", "C-d")  # and its next two occurrences
        s.wait_for("(3 cursors)")
        s.type("qux")
        s.wait_for("qux bar qux baz qux")
        s.keys("Escape", "Down", "Home")
        s.wait(lambda t: "(3 cursors)" not in t and "Ln 2, Col 1" in t, "one cursor on line 2")
        s.keys("C-M-Down")  # add a cursor below
        s.wait_for("(2 cursors)")
        s.type("> ")
        s.wait(lambda t: "> alpha" in t and "> beta" in t, "both lines edited")
    finally:
        s.close()


def test_occurrence_and_find_wrap(work):
    path = os.path.join(work, "w.txt")
    with open(path, "w") as f:
        f.write("foo one\nbar\nfoo two\nno match here\n")
    s = Screen([path], work)
    try:
        s.wait_for("no match here")
        s.keys("Down", "Down")
        s.wait(lambda t: "Ln 3, Col 1" in status_line(t), "line 3")
        s.keys("C-d", "C-d")  # the word, then its next occurrence: past the end, from the top
        s.wait_for("(2 cursors)")
        s.type("baz")
        s.wait(lambda t: "baz one" in t and "baz two" in t, "both occurrences edited")
        s.keys("Escape", "C-End")
        s.keys("C-f")
        s.type("bar")
        s.keys("Enter")
        s.wait(lambda t: "Ln 2, Col 4" in status_line(t), "the match found after wrapping")
        s.keys("C-f")
        s.keys("C-u")
        s.type("absent")
        s.keys("Enter")
        s.wait_for("Not found: absent")
    finally:
        s.close()


def test_syntax_colours(work):
    path = os.path.join(work, "c.c")
    with open(path, "w") as f:
        f.write("int main(void) {\n    return 42;\n}\n")
    s = Screen([path], work)
    try:
        def colours_of(screen, needle):
            line = line_of(screen, needle) or ""
            return set(re.findall(r"38;5;(\d+)m", line[line.find(needle) - 20:]))
        # The keyword, the number and the punctuation each in their colour.
        s.wait(lambda t: len(colours_of(t, "return")) >= 3, "a coloured keyword", colored=True)
        s.wait(lambda t: len(colours_of(t, "main")) >= 3, "a coloured type and function", colored=True)
    finally:
        s.close()


def trust_folder(work, data_home):
    """Trusts work in the data directory under data_home, as a user would once (language servers start only
    in a trusted folder)."""
    import json
    ecpctl = os.path.join(os.path.dirname(TUI), "..", "cli", "ecpctl")
    env = dict(os.environ, XDG_DATA_HOME=data_home)
    out = subprocess.run([ecpctl, "--spawn", "--workspace", work, "workspace/trust",
                          json.dumps({"uri": "file://" + work, "trusted": True})],
                         capture_output=True, text=True, env=env, check=True).stdout
    if not json.loads(out)["result"]["trusted"]:
        raise Failure("workspace/trust: " + out)


def git(work, *args):
    subprocess.run(["git", "-C", work, "-c", "user.name=t", "-c", "user.email=t@example.com"] + list(args), check=True,
                   capture_output=True)


def test_git_gutter(work):
    git(work, "init", "-q", "-b", "trunk")
    path = os.path.join(work, "g.txt")
    with open(path, "w") as f:
        f.write("one\ntwo\nthree\n")
    git(work, "add", "g.txt")
    git(work, "commit", "-qm", "first")
    s = Screen([path], work)
    try:
        s.wait(lambda t: "trunk" in status_line(t), "the branch in the status bar")
        s.keys("Down")
        s.type("2")
        s.wait(lambda t: re.search(r"^~ *2 2two", t, re.M) is not None, "a modified mark on line 2")
        s.keys("Down", "End", "Enter")
        s.type("four")
        s.wait(lambda t: re.search(r"^\+ *4 four", t, re.M) is not None, "an added mark on line 4")
    finally:
        s.close()


def test_terminal_pane(work):
    path = os.path.join(work, "t.txt")
    with open(path, "w") as f:
        f.write("text\n")
    s = Screen([path], work)
    try:
        s.wait_for("text")
        s.keys("C-t")
        s.wait_for("TERMINAL")
        s.type("echo sum-$((6*7))")
        s.keys("Enter")
        s.wait_for("sum-42")
        s.keys("C-t")  # back to the editor: typing goes to the text
        s.type("X")
        s.wait_for("Xtext")
    finally:
        s.close()


def test_quit_asks_when_unsaved(work):
    path = os.path.join(work, "q.txt")
    with open(path, "w") as f:
        f.write("keep\n")
    s = Screen([path], work)
    try:
        s.wait_for("keep")
        s.type("changed ")
        s.wait_for("changed keep")
        s.keys("C-q")
        s.wait_for("unsaved")
        s.type("c")  # cancel: still running
        s.wait(lambda t: "unsaved" not in status_line(t), "the question gone")
        if s.exited() is not None:
            raise Failure("quit without the answer")
        s.keys("C-q")
        s.wait_for("unsaved")
        s.type("d")
        if s.wait_exit() != "0":
            raise Failure("exit status " + s.exited())
        with open(path) as f:
            if f.read() != "keep\n":
                raise Failure("discarding wrote the file")
    finally:
        s.close()


def test_resize(work):
    path = os.path.join(work, "r.txt")
    with open(path, "w") as f:
        f.write("".join("line %d of the file\n" % i for i in range(1, 60)))
    s = Screen([path], work, cols=100, rows=30)
    try:
        s.wait_for("line 28 of")
        s.tmux("resize-window", "-x", "40", "-y", "10")
        s.wait(lambda t: len(t.splitlines()) <= 10 and "Ln 1, Col 1" in status_line(t), "the small layout")
        s.tmux("resize-window", "-x", "20", "-y", "5")
        s.wait(lambda t: len(t.splitlines()) <= 5, "a 20x5 screen")
        s.tmux("resize-window", "-x", "120", "-y", "40")
        s.wait_for("line 38 of")
        s.keys("C-g")
        s.type("50")
        s.keys("Enter")
        s.wait(lambda t: "Ln 50, Col 1" in status_line(t) and "line 50 of" in t, "line 50")
    finally:
        s.close()


def server_pid(work):
    out = subprocess.run(["pgrep", "-f", "ecpd --stdio --workspace " + work + "$"], capture_output=True, text=True).stdout
    pids = out.split()
    return int(pids[0]) if pids else None


def test_server_dies(work):
    path = os.path.join(work, "k.txt")
    with open(path, "w") as f:
        f.write("alpha\nbeta\n")
    s = Screen([path], work)
    try:
        s.wait_for("beta")
        s.type("unsaved ")
        s.wait_for("unsaved alpha")
        # The server keeps unsaved text for recovery within about a second of an edit.
        time.sleep(1.5)
        os.kill(server_pid(work), 9)
        screen = s.wait_for("The server stopped")
        if "unsaved alpha" not in screen:
            raise Failure("the text left the screen:\n" + screen)
        s.keys("C-s")  # restarts the server, recovers the text, asks where to save it
        s.wait_for("Save as:")
        s.keys("C-u")
        s.type(os.path.join(work, "rescued.txt"))
        s.keys("Enter")
        s.wait_for("Saved")
        with open(os.path.join(work, "rescued.txt")) as f:
            got = f.read()
        if got != "unsaved alpha\nbeta\n":
            raise Failure("rescued text: %r" % got)
    finally:
        s.close()


def test_shared_socket_server(work):
    ecpd = os.path.join(os.path.dirname(TUI), "..", "..", "server", "ecpd")
    sock = os.path.join(work, "ecpd.sock")
    env = dict(os.environ, XDG_DATA_HOME=os.path.join(work, "data"))
    server = subprocess.Popen([ecpd, "--socket", sock, "--workspace", work], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    path = os.path.join(work, "shared.txt")
    with open(path, "w") as f:
        f.write("shared\n")
    try:
        deadline = time.monotonic() + TIMEOUT
        while not os.path.exists(sock):
            if time.monotonic() > deadline:
                raise Failure("the socket server did not start")
            time.sleep(0.01)
        s = Screen(["--connect", sock, path], work)
        try:
            s.wait_for("shared")
            s.type("on the socket, ")
            s.keys("C-s")
            s.wait_for("Saved")
            with open(path) as f:
                if f.read() != "on the socket, shared\n":
                    raise Failure("file on disk")
            # another client rebinds a key: the editor's keymap follows at once
            ecpctl = os.path.join(os.path.dirname(TUI), "..", "cli", "ecpctl")
            subprocess.run([ecpctl, "--socket", sock, "keybindings/add",
                            '{"key":"ctrl+k","command":"nav.gotoLine"}'], check=True, capture_output=True,
                           timeout=TIMEOUT)
            # The rebinding reaches the editor as a notification on its own connection, which it may read
            # after the key: a key pressed before it arrives is "not bound", and pressing again must work.
            deadline = time.monotonic() + TIMEOUT
            while True:
                s.keys("C-k")
                pressed = time.monotonic()
                while "Go to line:" not in s.text() and time.monotonic() - pressed < 1.0:
                    time.sleep(0.05)
                if "Go to line:" in s.text():
                    break
                if time.monotonic() > deadline:
                    raise Failure("ctrl+k never took the new binding; screen:\n" + s.text())
            s.keys("Escape")
        finally:
            s.close()
    finally:
        server.terminate()
        server.wait()


def test_picker_search_find(work):
    with open(os.path.join(work, "alpha_one.txt"), "w") as f:
        f.write("nothing here\n")
    with open(os.path.join(work, "beta_two.txt"), "w") as f:
        f.write("first\nsecond\nthe needle line\nlast needle\n")
    s = Screen([work], work)
    try:
        s.wait_for("alpha_one.txt")
        s.type("beta")
        s.wait(lambda t: "alpha_one.txt" not in t and "beta_two.txt" in t, "the picker narrowed")
        s.keys("Enter")
        s.wait_for("second")
        s.keys("F4")
        s.wait_for("Search in files:")
        s.type("needle")
        s.keys("Enter")
        s.wait_for("beta_two.txt:4: last needle")
        s.keys("Down", "Enter")
        s.wait(lambda t: "Ln 4, Col 6" in status_line(t), "the jump to the second match")
        s.keys("C-Home")
        s.keys("C-f")
        s.type("needle")
        s.keys("Enter")
        s.wait(lambda t: "Ln 3, Col 11" in status_line(t), "the first match selected")
        s.keys("C-r")
        s.type("needle")
        s.keys("Enter")
        s.type("pin")
        s.keys("Enter")
        s.wait_for("Replace this one?")
        s.type("a")  # this one and the rest
        s.wait_for("Replaced 2 occurrences")
        s.wait(lambda t: "the pin line" in t and "last pin" in t, "both replaced")
    finally:
        s.close()


def theme_rgb(work, scope):
    """The current theme's foreground for a token scope, as the server gives it."""
    import json
    ecpctl = os.path.join(os.path.dirname(TUI), "..", "cli", "ecpctl")
    env = dict(os.environ, XDG_DATA_HOME=os.path.join(work, "theme-data"))
    out = subprocess.run([ecpctl, "--spawn", "--workspace", work, "theme/current"], capture_output=True, text=True,
                         env=env, check=True).stdout
    theme = json.loads(out)["result"]["theme"]
    for rule in theme["tokenColors"]:
        scopes = rule["scope"] if isinstance(rule["scope"], list) else [rule["scope"]]
        if scope in scopes:
            h = rule["settings"]["foreground"].lstrip("#")
            return tuple(int(h[i:i + 2], 16) for i in (0, 2, 4))
    raise Failure("no %s colour in the theme" % scope)


def nearest_256(rgb):
    steps = [0, 95, 135, 175, 215, 255]
    idx = [min(range(6), key=lambda i: abs(steps[i] - c)) for c in rgb]
    cube = 16 + 36 * idx[0] + 6 * idx[1] + idx[2]
    cube_dist = sum((steps[i] - c) ** 2 for i, c in zip(idx, rgb))
    grey = sum(rgb) // 3
    gi = 0 if grey < 8 else 23 if grey > 238 else (grey - 8) // 10
    gv = 8 + 10 * gi
    grey_dist = sum((gv - c) ** 2 for c in rgb)
    return 232 + gi if grey_dist < cube_dist else cube


def keyword_colour(screen):
    """The SGR colour the keyword `return` is painted with."""
    m = re.search(r"\x1b\[([0-9;:]*)m\s*return", screen)
    return m.group(1) if m else None


def test_truecolor(work):
    path = os.path.join(work, "c.c")
    with open(path, "w") as f:
        f.write("int main(void) {\n    return 42;\n}\n")
    r, g, b = theme_rgb(work, "keyword")
    exact = "38;2;%d;%d;%d" % (r, g, b)
    # A direct-colour terminfo, and a 256-colour one whose terminal says it has 24-bit colour
    # (COLORTERM, as tmux with Tc does): both paint the theme's exact RGB.
    for term in ("xterm-direct", "tmux-256color"):
        s = Screen([path], work, env={"TERM": term, "COLORTERM": "truecolor"})
        try:
            s.wait(lambda t: exact in (keyword_colour(t) or ""), "the keyword in %s under %s" % (exact, term),
                   colored=True)
        finally:
            s.close()
    # Without COLORTERM a 256-colour terminal gets the nearest of its 256.
    s = Screen([path], work, env={"TERM": "tmux-256color"})
    try:
        nearest = "38;5;%d" % nearest_256((r, g, b))
        s.wait(lambda t: nearest in (keyword_colour(t) or ""), "the keyword in %s" % nearest, colored=True)
    finally:
        s.close()


def test_rebinding_applies_at_once(work):
    path = os.path.join(work, "k.txt")
    with open(path, "w") as f:
        f.write("".join("line %d\n" % i for i in range(1, 40)))
    s = Screen([path], work)
    try:
        s.wait_for("line 20")
        s.keys("C-k")
        s.wait_for("ctrl+k is not bound")
        # Through the palette: the binding goes to the server, and is read back from it.
        s.keys("C-e")
        s.wait_for("Command palette")
        s.type("Bind a key")
        s.keys("Enter")
        s.wait_for("Bind the key")
        s.type("Ctrl+K")
        s.keys("Enter")
        s.wait_for("ctrl+k runs the command:")
        s.type("nav.gotoLine")
        s.keys("Enter")
        s.wait_for("ctrl+k now runs nav.gotoLine")
        s.keys("C-k")
        s.wait_for("Go to line:")
        s.type("30")
        s.keys("Enter")
        s.wait(lambda t: "Ln 30, Col 1" in status_line(t), "the jump through the new key")
        # A built-in key rebound: Ctrl+G now opens the help.
        s.keys("F2")
        s.wait_for("Command palette")
        s.type("Bind a key")
        s.keys("Enter")
        s.wait_for("Bind the key")
        s.type("ctrl+g")
        s.keys("Enter")
        s.wait_for("ctrl+g runs the command: nav.gotoLine")
        s.type("app.help")
        s.keys("Enter")
        s.wait_for("ctrl+g now runs app.help")
        s.keys("C-g")
        s.wait_for("Keys (type to filter")
        s.keys("Escape")
        # Unbound on the server, the key runs its built-in command again.
        s.keys("F2")
        s.type("Unbind a key")
        s.keys("Enter")
        s.wait_for("Unbind the key:")
        s.type("ctrl+g")
        s.keys("Enter")
        s.wait_for("ctrl+g runs what it ran before")
        s.keys("C-g")
        s.wait_for("Go to line:")
    finally:
        s.close()


def tui_pid(screen):
    out = subprocess.run(["pgrep", "-f", "--", "--server-log " + os.path.join(screen.dir, "server.log")],
                         capture_output=True, text=True).stdout
    pids = [int(p) for p in out.split() if int(p) != os.getpid()]
    for pid in pids:
        try:
            with open("/proc/%d/comm" % pid) as f:
                if f.read().strip() == "ecp-tui":
                    return pid
        except FileNotFoundError:
            pass
    return None


def test_server_killed_while_keys_wait(work):
    # Keys typed while a command waits for the server's answer wait behind it; the server dying then
    # must leave the editor working (no key replayed twice, none freed twice), and a restart usable.
    path = os.path.join(work, "q.txt")
    with open(path, "w") as f:
        f.write("alpha one\nalpha two\nalpha three\n")
    s = Screen([path], work)
    try:
        s.wait_for("alpha three")
        # The server stopped: Ctrl+D waits for the cursors, and the keys after it wait behind it.
        pid = server_pid(work)
        os.kill(pid, signal.SIGSTOP)
        s.keys("C-d")
        s.keys("M-Down", "C-d", "C-c", "x", "C-d", "M-Down")
        time.sleep(0.3)
        os.kill(pid, signal.SIGKILL)
        s.wait_for("The server stopped")
        s.keys("C-s")  # restarts the server
        s.wait(lambda t: "The server stopped" not in status_line(t), "the restart")
        s.type("z")
        s.wait_for("zalpha one")
        # The editor stopped instead, with the keys in the terminal: it reads the keys and the
        # server's end in the same turn, in whichever order the loop hands them over.
        pid = server_pid(work)
        editor = tui_pid(s)
        os.kill(editor, signal.SIGSTOP)
        s.keys("C-d", "M-Down", "C-d", "C-c", "y", "C-d")
        os.kill(pid, signal.SIGKILL)
        time.sleep(0.3)
        os.kill(editor, signal.SIGCONT)
        s.wait_for("The server stopped")
        s.type("w")
        time.sleep(0.3)
        if s.exited() is not None:
            raise Failure("ecp-tui ended (%s) after the server did; screen:\n%s" % (s.exited(), s.text()))
        # With unsaved text and no server, the first Ctrl+Q warns and the second quits.
        s.keys("C-q")
        s.wait(lambda t: s.exited() is not None or "The server is gone with" in t, "quit or its warning")
        if s.exited() is None:
            s.keys("C-q")
        if s.wait_exit() != "0":
            raise Failure("ecp-tui exited with %s" % s.exited())
    finally:
        s.close()


def start_socket_server(work, sock):
    ecpd = os.path.join(os.path.dirname(TUI), "..", "..", "server", "ecpd")
    env = dict(os.environ, XDG_DATA_HOME=os.path.join(work, "data"))
    server = subprocess.Popen([ecpd, "--socket", sock, "--workspace", work], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + TIMEOUT
    while not os.path.exists(sock):
        if time.monotonic() > deadline:
            server.kill()
            raise Failure("the socket server did not start")
        time.sleep(0.01)
    return server


def tab_bar(screen):
    return screen.splitlines()[0] if screen else ""


def underlined(colored_line):
    """True when some cell of the line is drawn underlined (SGR 4, alone or among others; colours'
    38;5;N, 38;2;R;G;B and their 48 forms are skipped)."""
    for params in re.findall(r"\x1b\[([0-9;:]*)m", colored_line):
        codes = params.split(";")
        i = 0
        while i < len(codes):
            if codes[i] in ("38", "48", "58") and i + 1 < len(codes):
                i += 3 if codes[i + 1] == "5" else 5 if codes[i + 1] == "2" else 2
                continue
            if codes[i] == "4" or codes[i].startswith("4:"):
                return True
            i += 1
    return False


def test_two_clients_one_file(work):
    # Two editors on one shared server, one file: each has its own cursors, each sees the other's;
    # a save clears both's mark; one quitting without saving leaves the other's text alone.
    sock = os.path.join(work, "ecpd.sock")
    path = os.path.join(work, "both.txt")
    with open(path, "w") as f:
        f.write("middle\n")
    server = start_socket_server(work, sock)
    env = {"XDG_DATA_HOME": os.path.join(work, "data")}
    a = b = None
    try:
        a = Screen(["--connect", sock, path], work, env=env)
        a.wait_for("middle")
        b = Screen(["--connect", sock, path], work, env=env)
        b.wait_for("middle")
        a.keys("End")
        a.wait(lambda t: "Ln 1, Col 7" in status_line(t), "A at the end of the line")
        a.type(" tailA")
        a.wait_for("middle tailA")
        b.wait_for("middle tailA")
        b.type("headB ")  # B's cursor is its own: still at the start
        b.wait_for("headB middle tailA")
        a.wait_for("headB middle tailA")
        a.type("!")  # and A's is still at its end, moved by B's edit
        a.wait_for("headB middle tailA!")
        screen = a.wait(lambda t: "+1 other" in status_line(t), "A's status line naming the other client")
        colored = a.wait(lambda t: underlined(line_of(t, "headB") or ""), "B's cursor drawn in A's view", colored=True)
        a.keys("C-s")
        a.wait_for("Saved")
        b.wait(lambda t: "●" not in tab_bar(t), "B's mark cleared by A's save")
        with open(path) as f:
            got = f.read()
        if got != "headB middle tailA!\n":
            raise Failure("file on disk after A's save: %r" % got)
        b.type("more ")  # where B's cursor was left: after its own text
        b.wait_for("headB more middle")
        b.keys("C-s")
        b.wait_for("Saved")
        a.wait(lambda t: "headB more middle" in t and "●" not in tab_bar(t), "A with B's saved text and no mark")
        with open(path) as f:
            got = f.read()
        if got != "headB more middle tailA!\n":
            raise Failure("file on disk after both saves: %r" % got)
        # A types and does not save; B quits without saving: A's text stays, and A saves it.
        a.keys("End")
        a.type(" unsavedA")
        a.wait_for("tailA! unsavedA")
        b.wait(lambda t: "unsavedA" in t and "●" in tab_bar(t), "B seeing A's unsaved text")
        b.keys("C-q")
        question = b.wait(lambda t: "(s)ave all" in status_line(t), "B's question")
        if "others keep" not in status_line(question):
            raise Failure("the question does not say the others keep it open:\n" + question)
        b.type("d")
        if b.wait_exit() != "0":
            raise Failure("B's exit status " + b.exited())
        time.sleep(0.5)
        screen = a.text()
        if "tailA! unsavedA" not in screen or "●" not in tab_bar(screen):
            raise Failure("A's unsaved text changed when B quit:\n" + screen)
        if "+1 other" in status_line(screen):
            a.wait(lambda t: "+1 other" not in status_line(t), "B gone from A's status line")
        a.keys("C-s")
        a.wait_for("Saved")
        with open(path) as f:
            got = f.read()
        if got != "headB more middle tailA! unsavedA\n":
            raise Failure("file on disk after B discarded: %r" % got)
    finally:
        for s in (a, b):
            if s:
                s.close()
        server.terminate()
        server.wait()


def socket_server_pid(sock):
    out = subprocess.run(["pgrep", "-f", "ecpd --socket " + sock], capture_output=True, text=True).stdout
    pids = out.split()
    return int(pids[0]) if pids else None


def test_shared_server_killed_while_typing(work):
    # --connect with no server starts one; when it dies the editor connects again (starting another),
    # gets its unsaved text back, sends again the keys the dead one never answered and those typed
    # meanwhile: nothing typed is lost, nothing is shown and then dropped.
    sock = os.path.join(work, "ecpd.sock")
    path = os.path.join(work, "kill.txt")
    with open(path, "w") as f:
        f.write("alpha\n")
    s = Screen(["--connect", sock, path], work, env={"XDG_DATA_HOME": os.path.join(work, "data")})
    pid = None
    try:
        s.wait_for("alpha")
        pid = socket_server_pid(sock)
        if not pid:
            raise Failure("--connect with no server running started none")
        s.type("one ")
        s.wait_for("one alpha")
        time.sleep(1.5)  # the server keeps unsaved text for recovery within about a second of an edit
        os.kill(pid, signal.SIGSTOP)
        s.type("two ")  # sent, shown, never answered
        s.wait_for("one two alpha")
        os.kill(pid, signal.SIGKILL)
        s.wait_for("The server")
        s.type("three ")  # typed while there is no server
        s.wait_for("one two three alpha")
        new_pid = s.wait(lambda t: socket_server_pid(sock) not in (None, pid), "a new server") and socket_server_pid(sock)
        time.sleep(0.5)
        screen = s.text()
        if "one two three alpha" not in screen:
            raise Failure("typed text lost:\n" + screen)
        s.keys("C-s")
        s.wait_for("Saved")
        with open(path) as f:
            got = f.read()
        if got != "one two three alpha\n":
            raise Failure("file on disk: %r" % got)
        pid = new_pid
    finally:
        s.close()
        if pid:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        other = socket_server_pid(sock)
        if other:
            os.kill(other, signal.SIGKILL)


def socket_server_pids(sock):
    out = subprocess.run(["pgrep", "-f", "ecpd --socket " + sock], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def test_shared_server_killed_under_two_editors(work):
    # Both editors lose the server; one new server comes up for both, and both find the unsaved text,
    # with the keys one typed meanwhile.
    sock = os.path.join(work, "ecpd.sock")
    path = os.path.join(work, "two.txt")
    with open(path, "w") as f:
        f.write("alpha\n")
    env = {"XDG_DATA_HOME": os.path.join(work, "data")}
    a = Screen(["--connect", sock, path], work, env=env)
    b = None
    try:
        a.wait_for("alpha")
        b = Screen(["--connect", sock, path], work, env=env)
        b.wait_for("alpha")
        a.type("one ")
        b.wait_for("one alpha")
        time.sleep(1.5)  # journaled for recovery
        first = socket_server_pids(sock)
        for pid in first:
            os.kill(pid, signal.SIGKILL)
        a.wait_for("The server")
        a.type("two ")
        a.wait_for("one two alpha")
        b.wait_for("one two alpha")
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            time.sleep(0.2)
        running = socket_server_pids(sock)
        if len(running) != 1 or running[0] in first:
            raise Failure("socket servers running after the restart: %r (the killed: %r)" % (running, first))
        a.keys("C-s")
        a.wait_for("Saved")
        b.wait(lambda t: "●" not in tab_bar(t), "B's mark cleared by A's save")
        with open(path) as f:
            got = f.read()
        if got != "one two alpha\n":
            raise Failure("file on disk: %r" % got)
    finally:
        for s in (a, b):
            if s:
                s.close()
        for pid in socket_server_pids(sock):
            os.kill(pid, signal.SIGKILL)


def test_keys_typed_while_server_gone(work):
    # Its own server on stdio: keys typed while it is gone wait, unseen, and apply once Ctrl+S brought
    # it back with the unsaved text.
    path = os.path.join(work, "g.txt")
    with open(path, "w") as f:
        f.write("alpha\n")
    s = Screen([path], work)
    try:
        s.wait_for("alpha")
        s.type("one ")
        s.wait_for("one alpha")
        time.sleep(1.5)
        os.kill(server_pid(work), 9)
        s.wait_for("The server stopped")
        s.type("two ")
        s.wait_for("4 keys wait")
        if "two" in s.text():
            raise Failure("keys shown before any server has them:\n" + s.text())
        s.keys("C-s")
        s.wait_for("Save as:")
        s.keys("Escape")
        s.wait_for("one two alpha")
        s.keys("C-s")
        s.wait_for("Saved")
        with open(path) as f:
            got = f.read()
        if got != "one two alpha\n":
            raise Failure("file on disk: %r" % got)
    finally:
        s.close()


def test_quick_quit_after_typing_asks(work):
    # Ctrl+Q right after a key: the dirty state has not come back yet, but the edit was sent.
    path = os.path.join(work, "fast.txt")
    with open(path, "w") as f:
        f.write("keep\n")
    for attempt in range(5):
        s = Screen([path], work)
        try:
            s.wait_for("keep")
            s.keys("x", "C-q")
            s.wait(lambda t: "unsaved" in t or s.exited() is not None, "the question")
            if s.exited() is not None:
                raise Failure("quit without asking, attempt %d" % attempt)
            s.type("d")
            s.wait_exit()
        finally:
            s.close()


def table_commands():
    """The commands as the editor's one table lists them: (name, help line)."""
    source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients", "tui", "commands.c")
    with open(source) as f:
        text = f.read()
    table = text[text.index("commands[] = {"):]
    table = table[:table.index("\n};")]
    return re.findall(r'^\s*\{"([^"]+)", "((?:[^"\\]|\\.)*)", cmd_', table, re.M)


def test_every_command_in_help(work):
    commands = table_commands()
    names = [name for name, _ in commands]
    # The names the editor's dispatch once handled that its help did not list are in the table now.
    for name in ("theme.reload", "select.top", "select.bottom", "keys.bind", "server.restart"):
        if name not in names:
            raise Failure("%s is not in the commands table" % name)
    if len(commands) < 60 or len(set(names)) != len(names):
        raise Failure("the commands table: %r" % names)
    path = os.path.join(work, "h.txt")
    with open(path, "w") as f:
        f.write("help\n")
    s = Screen([path], work, rows=40)
    try:
        s.wait_for("help")
        s.keys("F1")
        s.wait_for("Keys (type to filter")
        for name, help_line in commands:
            s.type(name)
            s.wait(lambda t: any(line.split() and line.split()[-1] == name and help_line in line
                                 for line in t.splitlines()), "%s with its help in F1's list" % name)
            s.keys(*["BSpace"] * len(name))
            s.wait(lambda t: line_of(t, "Keys (type to filter") is not None and name not in line_of(t, "Keys (type"),
                   "the filter cleared after " + name)
    finally:
        s.close()


def test_commands_bound_from_another_client(work):
    # Commands that only the dispatch knew (not F1, not the palette) run when another client binds them.
    ecpd = os.path.join(os.path.dirname(TUI), "..", "..", "server", "ecpd")
    ecpctl = os.path.join(os.path.dirname(TUI), "..", "cli", "ecpctl")
    sock = os.path.join(work, "ecpd.sock")
    env = dict(os.environ, XDG_DATA_HOME=os.path.join(work, "data"))
    server = subprocess.Popen([ecpd, "--socket", sock, "--workspace", work], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    path = os.path.join(work, "b.txt")
    with open(path, "w") as f:
        f.write("".join("row %d\n" % i for i in range(1, 11)))
    try:
        deadline = time.monotonic() + TIMEOUT
        while not os.path.exists(sock):
            if time.monotonic() > deadline:
                raise Failure("the socket server did not start")
            time.sleep(0.01)
        s = Screen(["--connect", sock, path], work)
        try:
            s.wait_for("row 10")

            def bind_and_press(key, tmux_key, command, done, what):
                subprocess.run([ecpctl, "--socket", sock, "keybindings/add",
                                '{"key":"%s","command":"%s"}' % (key, command)], check=True, capture_output=True,
                               timeout=TIMEOUT)
                # The binding arrives as a notification, maybe after the key: press again until it ran.
                deadline = time.monotonic() + TIMEOUT
                while True:
                    s.keys(tmux_key)
                    pressed = time.monotonic()
                    while not done(s.text()) and time.monotonic() - pressed < 1.0:
                        time.sleep(0.05)
                    screen = s.text()
                    if "Unknown command" in screen:
                        raise Failure("%s: %s" % (command, status_line(screen)))
                    if done(screen):
                        return
                    if time.monotonic() > deadline:
                        raise Failure("%s never ran %s; screen:\n%s" % (key, what, screen))

            bind_and_press("ctrl+k", "C-k", "select.bottom", lambda t: "Ln 11, Col 1" in status_line(t), "select.bottom")
            bind_and_press("ctrl+k", "C-k", "select.top", lambda t: "Ln 1, Col 1" in status_line(t), "select.top")
            bind_and_press("ctrl+b", "C-b", "keys.bind", lambda t: "Bind the key" in t, "keys.bind")
            s.keys("Escape")
            # The server takes control and option (and super) as modifiers' names: so does the editor.
            bind_and_press("Control+K", "C-k", "select.bottom", lambda t: "Ln 11, Col 1" in status_line(t),
                           "select.bottom under the name Control+K")
            s.keys("Escape")
        finally:
            s.close()
    finally:
        server.terminate()
        server.wait()


def test_huge_file(work):
    # 100 MB in a million lines: open it, page down, jump to its end.
    path = os.path.join(work, "huge.txt")
    row = "%07d " + "x" * 92 + "\n"
    with open(path, "w") as f:
        for block in range(0, 1000000, 10000):
            f.write("".join(row % i for i in range(block, block + 10000)))
    limit = float(os.environ.get("TUI_HUGE_FILE_SECONDS", "5"))
    start = time.monotonic()
    s = Screen([path], work, rows=24)
    try:
        s.wait(lambda t: "0000000 xxx" in t and "Ln 1, Col 1" in status_line(t), "the first page")
        took = time.monotonic() - start
        if took > limit:
            raise Failure("100 MB took %.2fs to show (limit %.1fs)" % (took, limit))
        s.keys("PageDown")
        s.wait(lambda t: "0000030 xxx" in t and "0000000 xxx" not in t and "Ln 23, Col 1" in status_line(t),
               "the next page")
        s.keys("C-End")
        s.wait(lambda t: "0999999 xxx" in t, "the last line")
        s.keys("C-Home")
        s.wait(lambda t: "0000000 xxx" in t and "Ln 1, Col 1" in status_line(t), "the first line again")
        # Find reads the lines after the cursor, not the whole 100 MB: a match nearby is at once.
        s.keys("C-f")
        s.wait_for("Find:")
        s.type("0000500 x")
        start = time.monotonic()
        s.keys("Enter")
        s.wait(lambda t: "Ln 501, Col 10" in status_line(t) and "0000500 xxx" in t, "the match nearby")
        near = time.monotonic() - start
        if near > limit / 5:
            raise Failure("a match 500 lines away took %.2fs" % near)
        # And one near the end, found forwards.
        s.keys("C-f")
        s.wait_for("Find:")
        s.type("0999990 ")
        s.keys("Enter")
        s.wait(lambda t: "Ln 999991, Col 9" in status_line(t) and "0999990 xxx" in t, "the match far away")
        print("     100 MB shown in %.2fs, a match nearby found in %.2fs" % (took, near))
    finally:
        s.close()


def test_binary_file(work):
    path = os.path.join(work, "blob.bin")
    with open(path, "wb") as f:
        f.write(b"ELF\x00\x01\x02\x1b[2J\x1b[31mred\x07\xff\xfe\x00tail\n" + bytes(range(256)) + b"\nend\n")
    before = open(path, "rb").read()
    s = Screen([path], work)
    try:
        screen = s.wait_for("binary file: shown read-only")
        lines = screen.splitlines()
        if len(lines) != 24 or "blob.bin" not in lines[0]:
            raise Failure("the screen is broken:\n" + screen)
        # The escape bytes are shown, never obeyed: the tab bar and the text stay in place.
        if not re.search(r"^ *1 ELF.*red.*tail", lines[1]):
            raise Failure("line 1 is not where it was:\n" + screen)
        s.type("typed")
        s.wait_for("is read-only (a binary file)")
        s.keys("C-s")
        s.wait_for("is read-only")
        if "typed" in s.text():
            raise Failure("an edit reached the screen")
        if open(path, "rb").read() != before:
            raise Failure("the binary file changed on disk")
    finally:
        s.close()


def mouse(s, button, x, y):
    """An X10 mouse report (what tmux-256color's kmous names), 0-based cell."""
    s.tmux("send-keys", "-H", "1b", "5b", "4d", "%02x" % (32 + button), "%02x" % (33 + x), "%02x" % (33 + y))


def test_mouse(work):
    path = os.path.join(work, "m.txt")
    with open(path, "w") as f:
        f.write("".join("row %02d of the text\n" % i for i in range(1, 80)))
    s = Screen([path], work)
    try:
        s.wait_for("row 22 of")
        # Row 5 of the screen is line 5; the gutter is 4 columns wide, so column 10 is column 7 of the text.
        mouse(s, 0, 10, 5)
        mouse(s, 3, 10, 5)
        s.wait(lambda t: "Ln 5, Col 7" in status_line(t), "the click's position")
        s.type("^")
        s.wait_for("row 05^ of the text")
        mouse(s, 65, 10, 5)  # the wheel, down: three lines
        s.wait(lambda t: re.search(r"^ *4 row 04", t, re.M) is not None and "row 03 of" not in t, "scrolled down")
        mouse(s, 64, 10, 5)  # and up
        s.wait(lambda t: re.search(r"^ *1 row 01", t, re.M) is not None, "scrolled back")
    finally:
        s.close()


def test_git_panel_and_palette(work):
    git(work, "init", "-q", "-b", "trunk")
    path = os.path.join(work, "p.txt")
    with open(path, "w") as f:
        f.write("one\n")
    git(work, "add", "p.txt")
    git(work, "commit", "-qm", "first")
    git(work, "config", "user.name", "Panel Tester")
    git(work, "config", "user.email", "panel@example.com")
    with open(os.path.join(work, "new.txt"), "w") as f:
        f.write("new file\n")
    s = Screen([path], work)
    try:
        s.wait(lambda t: "trunk" in status_line(t), "the branch")
        s.type("changed ")
        s.keys("C-s")
        s.wait_for("Saved")
        # The palette finds the git panel by its title.
        s.keys("C-e")
        s.wait_for("Command palette")
        s.type("git status")
        s.wait(lambda t: "git.panel" in t and "file.save " not in t, "the palette filtered")
        s.keys("Enter")
        s.wait(lambda t: "p.txt" in t and "new.txt" in t and "Untracked" in t, "the git status")
        s.keys("a")  # stage all
        s.wait(lambda t: "Staged" in t and "Untracked" not in t and "Changed" not in t, "everything staged")
        s.keys("c")
        s.wait_for("Commit message:")
        s.type("from the panel")
        s.keys("Enter")
        s.wait_for("Committed")
        s.wait_for("Nothing to commit")
        log = subprocess.run(["git", "-C", work, "log", "--format=%s", "--name-only", "-1"], capture_output=True,
                             text=True).stdout
        if "from the panel" not in log or "new.txt" not in log or "p.txt" not in log:
            raise Failure("the commit: %r" % log)
    finally:
        s.close()


def test_untrusted_folder_asks_and_says_restricted(work):
    marker = os.path.join(work, "shell-ran")
    shell = os.path.join(work, "tools", "shell.sh")
    os.makedirs(os.path.dirname(shell))
    with open(shell, "w") as f:
        f.write("#!/bin/sh\necho ran >> %s\nexec /bin/sh \"$@\"\n" % shlex_quote(marker))
    os.chmod(shell, 0o755)
    os.makedirs(os.path.join(work, ".ecpd"))
    with open(os.path.join(work, ".ecpd", "settings.json"), "w") as f:
        f.write('{"terminal.integrated.shell": "%s", "agent.approval": "allow"}' % shell)
    path = os.path.join(work, "t.txt")
    with open(path, "w") as f:
        f.write("text\n")
    env = {"XDG_DATA_HOME": os.path.join(work, "data-home")}  # kept from one run to the next

    def terminal_runs(s):
        s.keys("C-t")
        s.wait_for("TERMINAL")
        s.type("echo sum-$((6*7))")
        s.keys("Enter")
        s.wait_for("sum-42")

    s = Screen([path], work, env=env)
    try:
        s.wait_for("Trust this folder?")
        s.type("n")
        s.wait(lambda t: "Restricted" in status_line(t) and "text" in t, "the restricted status line")
        terminal_runs(s)
        if os.path.exists(marker):
            raise Failure("the untrusted folder's shell ran")
    finally:
        s.close()
    s = Screen([path], work, env=env)
    try:
        s.wait_for("Trust this folder?")
        s.type("y")
        s.wait(lambda t: "Restricted" not in status_line(t) and "text" in t, "the trusted status line")
        terminal_runs(s)
        if not os.path.exists(marker):
            raise Failure("the trusted folder's shell did not run")
    finally:
        s.close()
    s = Screen([path], work, env=env)
    try:
        s.wait_for("text")
        time.sleep(0.5)
        screen = s.text()
        if "Trust this folder?" in screen or "Restricted" in status_line(screen):
            raise Failure("a trusted folder is asked about again: %r" % status_line(screen))
    finally:
        s.close()


def test_paste_keeps_indentation(work):
    """A bracketed paste is one insert: indented lines arrive as they were, not indented again."""
    path = os.path.join(work, "p.txt")
    with open(path, "w") as f:
        f.write("end\n")
    s = Screen([path], work)
    try:
        s.wait_for("end")
        paste_and_save(s, path, "def f():\n    if x:\n        return 1\n    return 2\n", "    return 2",
                       "def f():\n    if x:\n        return 1\n    return 2\nend\n")
    finally:
        s.close()


def paste_and_save(s, path, text, shown, expected):
    """Pastes text as a terminal does (bracketed), waits for shown, saves, and checks the file."""
    s.tmux("set-buffer", text)
    s.tmux("paste-buffer", "-p")
    s.wait_for(shown)
    s.keys("C-s")
    s.wait_for("Saved")
    with open(path) as f:
        got = f.read()
    if got != expected:
        raise Failure("file on disk: %r" % got)


def test_paste_spreads_over_cursors(work):
    """A paste of as many lines as there are cursors puts one line at each."""
    path = os.path.join(work, "cols.txt")
    with open(path, "w") as f:
        f.write("one\ntwo\nsix\n")
    s = Screen([path], work)
    try:
        s.wait_for("six")
        s.keys("End")
        s.wait(lambda t: "Ln 1, Col 4" in t, "at the end of the first line")
        s.keys("C-M-Down")
        s.keys("C-M-Down")
        s.wait_for("(3 cursors)")
        paste_and_save(s, path, "=1\n=2\n=3\n", "two=2", "one=1\ntwo=2\nsix=3\n")
    finally:
        s.close()

def numbered_file(work, name, count):
    path = os.path.join(work, name)
    with open(path, "w") as f:
        f.write("".join("row %d\n" % i for i in range(1, count + 1)))
    return path


def test_page_down_burst(work):
    """Ten PgDn in one burst move ten pages, each from where the one before left the cursor."""
    path = numbered_file(work, "pages.txt", 1000)
    s = Screen([path], work)
    try:
        s.wait_for("row 1 ")
        s.keys(*(["PageDown"] * 10))
        screen = s.wait(lambda t: "Ln 1" not in status_line(t) and "row 1 " not in t, "ten pages down")
        time.sleep(0.5)
        screen = s.text()
        m = re.search(r"Ln (\d+),", status_line(screen))
        height = 22  # the tab bar and the status line take two rows
        if not m or int(m.group(1)) < 1 + 9 * (height - 1):
            raise Failure("ten pages down reached: " + status_line(screen))
        if ("row %s" % m.group(1)) not in screen:
            raise Failure("the cursor's line is not on screen:\n" + screen)
    finally:
        s.close()


def test_down_burst_keeps_cursor_on_screen(work):
    path = numbered_file(work, "downs.txt", 200)
    s = Screen([path], work, rows=12)
    try:
        s.wait_for("row 1 ")
        s.keys(*(["Down"] * 15))
        s.wait(lambda t: "Ln 16," in status_line(t), "line 16")
        s.wait(lambda t: re.search(r"\brow 16\b", t) is not None, "line 16 on screen")
        time.sleep(0.3)
        if not re.search(r"\brow 16\b", s.text()):
            raise Failure("the cursor left the screen:\n" + s.text())
    finally:
        s.close()


def test_enter_after_moves_takes_indent_of_its_line(work):
    path = os.path.join(work, "i.txt")
    with open(path, "w") as f:
        f.write("top\nmiddle\n        deep\n")
    s = Screen([path], work)
    try:
        s.wait_for("deep")
        s.keys("Down", "Down", "End", "Enter")
        s.type("x")
        s.wait_for("Ln 4, Col 10")
        s.keys("C-s")
        s.wait_for("Saved")
        with open(path) as f:
            got = f.read()
        if got != "top\nmiddle\n        deep\n        x\n":
            raise Failure("file on disk: %r" % got)
    finally:
        s.close()


def test_save_as_keeps_the_folder(work):
    path = os.path.join(work, "a.txt")
    with open(path, "w") as f:
        f.write("text\n")
    s = Screen([], work)
    try:
        s.wait(lambda t: "untitled" in t, "a new document")
        s.type("hello")
        s.wait_for("hello")
        s.keys("M-s")
        s.wait_for("Save as:")
        s.type("/new.txt")
        s.keys("Enter")
        s.wait_for("Saved")
        if not os.path.exists(os.path.join(work, "new.txt")):
            raise Failure("not saved in the folder: " + str(os.listdir(work)))
    finally:
        s.close()


def test_soft_wrap(work):
    path = os.path.join(work, "long.md")
    words = " ".join("word%d" % i for i in range(60))
    with open(path, "w") as f:
        f.write(words + "\nafter\n")
    s = Screen([path], work, cols=80)
    try:
        s.wait_for("after")
        screen = s.wait(lambda t: "word59" in t, "the end of the long line wrapped into view")
        if line_of(screen, "word0") == line_of(screen, "word59"):
            raise Failure("not wrapped:\n" + screen)
        s.keys("M-z")  # wrap off: the line is cut at the screen's edge
        s.wait(lambda t: "word59" not in t and "word0" in t, "wrap turned off")
    finally:
        s.close()


def test_git_panel_starts_on_a_file(work):
    git(work, "init", "-q", "-b", "trunk")
    path = os.path.join(work, "p.txt")
    with open(path, "w") as f:
        f.write("one\n")
    git(work, "add", "p.txt")
    git(work, "commit", "-qm", "first")
    with open(path, "w") as f:
        f.write("two\n")
    s = Screen([path], work)
    try:
        s.wait(lambda t: "trunk" in status_line(t), "the branch")
        s.keys("F5")
        s.wait(lambda t: "p.txt" in t and "Changed" in t, "the git status")
        s.keys("s")  # stages the selected file: the first one, not a heading
        s.wait(lambda t: "Staged" in t and "Changed" not in t, "the file staged")
    finally:
        s.close()


def test_line_commands(work):
    """Tab and Shift+Tab on a selection, Ctrl+/, Alt+Up/Down, Ctrl+Backspace, duplicate: the document's own commands."""
    path = os.path.join(work, "l.c")
    with open(path, "w") as f:
        f.write("int a;\nint b;\nint c;\n")
    s = Screen([path], work)
    try:
        s.wait_for("int c;")
        s.wait_for("Trust this folder?")  # clangd is what C would start: not here
        s.type("n")
        s.wait(lambda t: "Trust this folder?" not in t, "the question answered")
        s.keys("S-Down", "Tab")
        s.wait(lambda t: "    int a;" in t and "int b;" in t and "    int b;" not in t, "one line indented")
        s.keys("BTab")
        s.wait(lambda t: "    int a;" not in t, "outdented")
        s.keys("C-Home", "C-_")
        s.wait_for("// int a;")
        s.keys("C-_")
        s.wait(lambda t: "// int a;" not in t, "uncommented")
        s.keys("M-Down")
        s.wait(lambda t: re.search(r"1 int b;\s*\n.*2 int a;", t) is not None, "the line moved down")
        s.keys("M-D")  # Alt+Shift+D duplicates
        s.wait(lambda t: t.count("int a;") == 2, "the line duplicated")
        s.keys("End", "C-h")  # Ctrl+Backspace as a terminal sends it
        s.wait(lambda t: re.search(r"^ *3 int( a)?\s*$", t, re.M) is not None, "the word before the caret deleted")
    finally:
        s.close()


def test_find_toggles_count_and_interactive_replace(work):
    path = os.path.join(work, "f.txt")
    with open(path, "w") as f:
        f.write("Foo foo food\nfoo bar\nfoo end\n")
    s = Screen([path], work)
    try:
        s.wait_for("foo end")
        s.keys("C-f")
        s.wait_for("Find:")
        s.keys("M-w")  # whole word
        s.wait_for("word: on")
        s.keys("C-u")
        s.type("foo")
        s.keys("Enter")
        s.wait(lambda t: "Match 1 of 4" in t and "Ln 1, Col 4" in status_line(t), "the first whole-word match, counted")
        s.keys("F3")
        s.wait(lambda t: "Match 2 of 4" in t and "Ln 1, Col 8" in status_line(t), "the next")
        s.keys("S-F3")
        s.wait(lambda t: "Match 1 of 4" in t and "Ln 1, Col 4" in status_line(t), "the previous")
        s.keys("C-Home", "C-r")
        s.wait_for("Replace:")
        s.keys("M-c")  # case sensitive: Foo is not foo
        s.wait_for("case: on")
        s.keys("C-u")
        s.type("foo")
        s.keys("Enter")
        s.wait_for("Replace with:")
        s.type("bar")
        s.keys("Enter")
        s.wait_for("Replace this one?")
        s.type("n")
        time.sleep(0.3)
        s.wait_for("Replace this one?")
        s.type("y")
        s.wait(lambda t: "bar bar" in t and "Replace this one?" in t, "the second replaced, the third asked")
        s.type("a")
        s.wait(lambda t: "bar end" in t and "Replaced 2 occurrences" in t, "the rest replaced")
        if "Foo foo food" not in s.text():
            raise Failure("a match left alone changed:\n" + s.text())
    finally:
        s.close()


TESTS = [test_type_undo_save, test_multi_cursor, test_occurrence_and_find_wrap, test_syntax_colours,
         test_git_gutter, test_terminal_pane, test_quit_asks_when_unsaved, test_resize, test_server_dies,
         test_shared_socket_server, test_picker_search_find, test_truecolor, test_rebinding_applies_at_once,
         test_server_killed_while_keys_wait, test_every_command_in_help, test_commands_bound_from_another_client,
         test_huge_file, test_binary_file, test_mouse, test_git_panel_and_palette,
         test_untrusted_folder_asks_and_says_restricted, test_two_clients_one_file,
         test_shared_server_killed_while_typing, test_keys_typed_while_server_gone,
         test_quick_quit_after_typing_asks, test_shared_server_killed_under_two_editors,
         test_paste_keeps_indentation, test_paste_spreads_over_cursors, test_page_down_burst,
         test_down_burst_keeps_cursor_on_screen, test_enter_after_moves_takes_indent_of_its_line,
         test_save_as_keeps_the_folder, test_soft_wrap, test_git_panel_starts_on_a_file, test_line_commands,
         test_find_toggles_count_and_interactive_replace]


def main(tests=None):
    global TUI
    TUI = os.path.abspath(sys.argv[1])
    wanted = sys.argv[2:]
    failed = 0
    for test in tests if tests is not None else TESTS:
        if wanted and test.__name__ not in wanted and test.__name__[5:] not in wanted:
            continue
        work = tempfile.mkdtemp(prefix="ecp-tui-work-")
        start = time.monotonic()
        try:
            test(work)
            print("ok   %-32s %.2fs" % (test.__name__, time.monotonic() - start), flush=True)
        except Failure as e:
            failed += 1
            print("FAIL %-32s %s" % (test.__name__, e), flush=True)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
