#!/usr/bin/env python3
"""Reads run.sh's output on stdin and prints the speed table: each row beside
its comparator from the same run, the ratio, and the target it must reach.

A row whose benchmark did not run, or was skipped, is left out."""
import re
import sys

text = sys.stdin.read()


def fields(label):
    """The key=value pairs of the first line starting with label (and a blank), or None."""
    for line in text.splitlines():
        if line.startswith(label + " ") and "skipped" not in line:
            return dict(re.findall(r"([\w.]+)=([^\s]+)", line))
    return None


def row(name, workload, ours, theirs, comparator, target, bound):
    ratio = float(ours) / float(theirs)
    verdict = "met" if ratio <= bound else "not met"
    shown = ("%.2f" if ratio >= 0.1 else "%.3f") % ratio
    print("| %s | %s | %s | %s %s | %s× | %s %s |" % (name, workload, ours, comparator, theirs, shown, target, verdict))


print("| id | workload | ecpd | comparator | ratio | target |")
print("|---|---|---|---|---|---|")
f = fields("B16")
if f:
    row("B16", "start, answer one `ecp/ping` on stdio, exit (ms)", f["ecpd_ms"], f["nvim_ms"],
        "`nvim --headless -u NONE +q`", "≤ 0.8×", 0.8)
f = fields("B1-tail")
if f:
    row("B1-tail", "p99 of sequential `document/info` (µs)", f["p99_us"], f["nvim_p99_us"],
        "nvim `nvim_buf_line_count`", "≤ 1.5×", 1.5)
f = fields("B1-instr")
if f:
    row("B1-instr", "instructions per `ecp/ping` (callgrind)", f["ping_instr"], f["nvim_line_count_instr"],
        "nvim `nvim_buf_line_count`", "≤ 0.7×", 0.7)
f = fields("B2-cpu")
if f:
    row("B2-cpu", "server CPU per pipelined `document/insert` (µs)", f["insert_server_cpu_us"],
        f["nvim_set_text_cpu_us"], "nvim `nvim_buf_set_text`", "≤ 0.8×", 0.8)
f = fields("B15 way=edit")
if f:
    row("B15", "RSS after a 50 MB replace-all and undo, twice (MB)", f["after_mb"], f["file_mb"], "the file",
        "≤ 3×", 3.0)
f = fields("B15-disk way=edit")
if f:
    row("B15-disk", "hot-exit store after the same, once saved (MB)", f["saved_mb"], f["file_mb"], "the file",
        "≤ 0.1×", 0.1)
