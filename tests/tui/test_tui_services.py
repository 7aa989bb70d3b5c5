#!/usr/bin/env python3
"""ecp-tui in a real terminal with the services that run programs: language
servers (clangd's diagnostics, completion, definitions, rename, references,
format, hover and code actions) and the agent's chat against the scripted
model. The terminal and its helpers are test_tui.py's.

usage: test_tui_services.py ECP_TUI [TEST ...]
"""
import os
import re
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_tui  # noqa: E402
from test_tui import Failure, Screen, go_to, status_line, trust_folder  # noqa: E402
from mock_llm import MockLLM  # noqa: E402


def test_clangd_diagnostic(work):
    if not shutil.which("clangd"):
        print("skipped: no clangd")
        return
    path = os.path.join(work, "d.c")
    with open(path, "w") as f:
        f.write("int main(void) { return undeclared_thing; }\n")
    data_home = os.path.join(work, "data-home")
    trust_folder(work, data_home)
    s = Screen([path], work, env={"XDG_DATA_HOME": data_home})
    try:
        screen = s.wait(lambda t: "undeclared" in status_line(t), "the diagnostic on the status line")
        if "error" not in status_line(screen):
            raise Failure("status line: " + status_line(screen))
        s.wait(lambda t: re.search(r"\x1b\[(?:[0-9;]*;)?4(?:;[0-9;]*)?m(?:\x1b\[[0-9;]*m)*undeclared_thing", t) is not None,
               "the underlined identifier", colored=True)
    finally:
        s.close()


def test_language_server_asks_for_trust(work):
    """A fresh clone with no settings: the language server is what needs trust, so the editor asks then."""
    if not shutil.which("clangd"):
        print("skipped: no clangd")
        return
    path = os.path.join(work, "u.c")
    with open(path, "w") as f:
        f.write("int main(void) { return undeclared_thing; }\n")
    s = Screen([path], work, env={"XDG_DATA_HOME": os.path.join(work, "data-home")})
    try:
        screen = s.wait_for("Trust this folder?")
        if "Language servers" not in screen:
            raise Failure("the question does not say why: " + screen)
        if re.search(r"\x1b\[(?:[0-9;]*;)?4(?:;[0-9;]*)?m(?:\x1b\[[0-9;]*m)*undeclared_thing", s.colored()):
            raise Failure("a language server ran before the folder was trusted")
        s.type("y")
        s.wait_for("Trusted")
        s.wait(lambda t: re.search(r"\x1b\[(?:[0-9;]*;)?4(?:;[0-9;]*)?m(?:\x1b\[[0-9;]*m)*undeclared_thing", t) is not None,
               "the diagnostic's underline once the folder is trusted", colored=True)
    finally:
        s.close()


def agent_env(mock):
    return {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": "http://127.0.0.1:%d/v1" % mock.port,
            "ECPD_MODEL": "openai/mock-model"}


def tool_reply(name, args, call_id):
    import json
    text = json.dumps(args)
    return {"tools": [{"id": call_id, "name": name, "arguments": [text[:7], text[7:]]}]}


def test_agent_chat(work):
    mock = MockLLM([
        {"text": ["Hel", "lo from ", "the mock model"], "delay": 0.05},
        tool_reply("write_file", {"path": "approved.txt", "content": "written by the agent\n"}, "call_w1"),
        {"text": ["the file is written"]},
        tool_reply("write_file", {"path": "rejected.txt", "content": "never\n"}, "call_w2"),
        {"text": ["understood, nothing written"]},
        {"text": ["a long answer that "], "hang": True},
    ])
    path = os.path.join(work, "notes.txt")
    with open(path, "w") as f:
        f.write("text\n")
    s = Screen([path], work, rows=30, env=agent_env(mock))
    try:
        s.wait_for("text")
        s.keys("M-a")
        s.wait_for("AGENT")
        s.type("say hello")
        s.keys("Enter")
        screen = s.wait_for("Hello from the mock model")
        if "you> say hello" not in screen or "mock-model" not in screen:
            raise Failure("the prompt or the model is not shown:\n" + screen)
        s.wait(lambda t: "idle" in t, "the turn's end")
        # A write waits for approval; y approves it and the file appears.
        s.type("write a file")
        s.keys("Enter")
        s.wait_for("y approves, n rejects")
        if os.path.exists(os.path.join(work, "approved.txt")):
            raise Failure("written before the approval")
        s.type("y")
        s.wait_for("the file is written")
        with open(os.path.join(work, "approved.txt")) as f:
            if f.read() != "written by the agent\n":
                raise Failure("the approved file's content")
        s.wait(lambda t: "idle" in t, "the turn's end")
        # n rejects the next one: nothing on disk.
        s.type("write another")
        s.keys("Enter")
        s.wait_for("y approves, n rejects")
        s.type("n")
        s.wait_for("understood, nothing written")
        s.wait(lambda t: "rejected" in t, "the rejected call shown")
        if os.path.exists(os.path.join(work, "rejected.txt")):
            raise Failure("a rejected write reached the disk")
        s.wait(lambda t: "idle" in t, "the turn's end")
        # Escape stops an answer that would not end.
        s.type("go on forever")
        s.keys("Enter")
        s.wait_for("a long answer that")
        s.wait(lambda t: "answering..." in t, "the running turn")
        s.keys("Escape")
        s.wait(lambda t: "idle" in t, "the stopped turn")
        # Back to the editor: keys edit the text again.
        s.keys("M-a")
        s.type("X")
        s.wait_for("Xtext")
    finally:
        s.close()
        mock.close()


def clangd_project(work, source):
    import json
    path = os.path.join(work, "main.c")
    with open(path, "w") as f:
        f.write(source)
    with open(os.path.join(work, "compile_commands.json"), "w") as f:
        json.dump([{"directory": work, "command": "cc -c main.c", "file": path}], f)
    data_home = os.path.join(work, "data-home")
    trust_folder(work, data_home)
    return path, data_home


def clangd_editor(work, source):
    """ecp-tui on main.c of a trusted clangd project holding source, once clangd's first diagnostic
    shows; None (the test is skipped) without clangd."""
    if not shutil.which("clangd"):
        print("skipped: no clangd")
        return None
    path, data_home = clangd_project(work, source)
    s = Screen([path], work, env={"XDG_DATA_HOME": data_home})
    try:
        wait_clangd_ready(s)
    except BaseException:
        s.close()
        raise
    return s


def wait_clangd_ready(s):
    s.wait(lambda t: "unused_marker" in status_line(t).lower(), "clangd's first diagnostic")


CLANGD_SOURCE = ("#warning unused_marker\n"
                 "struct point { int xcoord; int ycoord; };\n"
                 "static int helper_value(int v) { return v + 1; }\n"
                 "int main(void) {\n"
                 "    int unused_marker;\n"
                 "    struct point p = {1, 2};\n"
                 "    int r = helper_value(p.xcoord);\n"
                 "    r += helper_value(3);\n"
                 "    return r;\n"
                 "}\n")


def test_completion_from_clangd(work):
    s = clangd_editor(work, CLANGD_SOURCE)
    if not s:
        return
    try:
        s.keys("C-g")
        s.type("9")
        s.keys("Enter")
        s.wait(lambda t: "Ln 9, Col 1" in status_line(t), "line 9")
        s.keys("End", "Left")
        s.type(" + p.")
        # the popup, opened by the trigger character: the members listed under the caret
        s.wait(lambda t: sum("ycoord" in line for line in t.splitlines()) >= 2, "the completion popup")
        s.keys("Down")
        s.keys("Enter")
        s.wait_for("return r + p.ycoord;")
    finally:
        s.close()


def test_definition_and_back(work):
    s = clangd_editor(work, CLANGD_SOURCE)
    if not s:
        return
    try:
        go_to(s, 8, 12)
        s.keys("F12")
        s.wait(lambda t: "Ln 3," in status_line(t), "the definition")
        s.keys("M-Left")
        s.wait(lambda t: "Ln 8, Col 12" in status_line(t), "back at the call")
    finally:
        s.close()


def test_rename_every_occurrence(work):
    s = clangd_editor(work, CLANGD_SOURCE)
    if not s:
        return
    try:
        go_to(s, 3, 14)
        s.keys("F9")
        s.wait_for("Rename to:")
        s.keys("C-u")
        s.type("bumped")
        s.keys("Enter")
        s.wait(lambda t: "helper_value" not in t and t.count("bumped(") == 3, "three occurrences renamed")
    finally:
        s.close()


def test_chat_keeps_history_and_every_character(work):
    """The chat opens on the latest chat with its messages, and a long answer loses nothing where it wraps."""
    digits = "".join(str(i % 10) for i in range(150))
    mock = MockLLM([{"text": [digits]}])
    path = os.path.join(work, "notes.txt")
    with open(path, "w") as f:
        f.write("text\n")
    data_home = os.path.join(work, "data-home")
    env = dict(agent_env(mock), XDG_DATA_HOME=data_home)
    s = Screen([path], work, cols=60, rows=30, env=env)
    try:
        s.wait_for("text")
        s.keys("M-a")
        s.wait_for("AGENT")
        s.type("count for me")
        s.keys("Enter")
        s.wait(lambda t: "idle" in t and "0123" in t, "the answer")
        # The pane is 60 columns: the answer wraps; joined again, every digit is there.
        rows = [line.rstrip() for line in s.text().splitlines()]
        joined = "".join(r.strip() for r in rows if re.fullmatch(r"\s*[0-9]+", r or "x"))
        if digits not in joined:
            raise Failure("characters lost at the wraps: %r" % joined)
        s.keys("C-q")
        s.wait_exit()
    finally:
        s.close()
    s = Screen([path], work, cols=60, rows=30, env=env)
    try:
        s.wait_for("text")
        s.keys("M-a")
        s.wait_for("AGENT")
        s.wait(lambda t: "count for me" in t and "0123" in t, "the last chat's messages")
    finally:
        s.close()
        mock.close()


def test_references_and_format(work):
    source = CLANGD_SOURCE.replace("    return r;", "    return   r ;")
    s = clangd_editor(work, source)
    if not s:
        return
    try:
        go_to(s, 3, 14)
        s.keys("F7")
        s.wait(lambda t: "References: 3" in t and "main.c:8:" in t, "the references listed")
        s.keys("Down", "Down", "Enter")
        s.wait(lambda t: "Ln 8, Col 10" in status_line(t), "the third reference")
        s.keys("F10")
        s.wait(lambda t: "return r;" in t and "return   r ;" not in t, "the document formatted")
    finally:
        s.close()


def test_hover(work):
    s = clangd_editor(work, CLANGD_SOURCE)
    if not s:
        return
    try:
        go_to(s, 8, 12)
        s.keys("M-k")
        s.wait(lambda t: "function helper_value" in t, "the hover box")
        s.keys("Right")  # the next key closes it
        s.wait(lambda t: "function helper_value" not in t, "the box gone")
    finally:
        s.close()


def test_redraw_and_code_actions(work):
    source = "#warning unused_marker\nint main(void) {\n    printf(\"hi\\n\");\n    return 0;\n}\n"
    s = clangd_editor(work, source)
    if not s:
        return
    try:
        s.keys("C-l")  # the whole screen painted again, the text as it was
        time.sleep(0.3)
        screen = s.wait(lambda t: "printf" in t, "the text after a redraw")
        if "not bound" in screen:
            raise Failure("Ctrl+L: " + status_line(screen))
        go_to(s, 3, 5)
        s.keys("F8")
        s.wait(lambda t: "Code actions" in t and "stdio.h" in t, "the include offered")
        s.keys("Enter")
        s.wait(lambda t: "#include <stdio.h>" in t, "the include added")
    finally:
        s.close()


def test_code_action_command(work):
    """A code action that is a command (clangd's "Extract subexpression to
    variable" in C++) runs in the server, whose edit reaches the screen."""
    if not shutil.which("clangd"):
        print("skipped: no clangd")
        return
    import json
    path = os.path.join(work, "tweak.cpp")
    with open(path, "w") as f:
        f.write("#warning unused_marker\nint twice(int v) { return v * 2; }\n"
                "int use(int a) {\n    return twice(a + 1) * 3;\n}\n")
    with open(os.path.join(work, "compile_commands.json"), "w") as f:
        json.dump([{"directory": work, "command": "c++ -c tweak.cpp", "file": path}], f)
    data_home = os.path.join(work, "data-home")
    trust_folder(work, data_home)
    s = Screen([path], work, env={"XDG_DATA_HOME": data_home})
    try:
        wait_clangd_ready(s)
        go_to(s, 4, 18)
        for _ in range(5):
            s.keys("S-Right")
        s.wait(lambda t: "Col 23" in status_line(t), "a + 1 selected")
        s.keys("F8")
        s.wait(lambda t: "Extract subexpression to variable" in t, "the tweak offered")
        s.keys("Enter")
        s.wait(lambda t: "placeholder = a + 1;" in t and "twice(placeholder)" in t, "the tweak applied")
    finally:
        s.close()


TESTS = [test_clangd_diagnostic, test_agent_chat, test_language_server_asks_for_trust, test_completion_from_clangd, test_definition_and_back, test_rename_every_occurrence, test_chat_keeps_history_and_every_character, test_references_and_format, test_hover, test_redraw_and_code_actions, test_code_action_command]


if __name__ == "__main__":
    test_tui.main(TESTS)
