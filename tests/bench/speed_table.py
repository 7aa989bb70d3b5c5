#!/usr/bin/env python3
"""Reads run.sh's output on stdin and prints the speed table: each row beside
its comparator from the same run, the ratio, and the target it must reach.

A row whose benchmark did not run, or was skipped, is left out."""
import re
import sys

# id, the line it is read from, the workload, ecpd's field, the comparator's field, the comparator, the bound
ROWS = [
    ("B16", "B16", "start, answer one `ecp/ping` on stdio, exit (ms)", "ecpd_ms", "nvim_ms",
     "`nvim --headless -u NONE +q`", 0.8),
    ("B1-tail", "B1-tail", "p99 of sequential `document/info` (µs)", "p99_us", "nvim_p99_us",
     "nvim `nvim_buf_line_count`", 1.5),
    ("B1-instr", "B1-instr", "instructions per `ecp/ping` (callgrind)", "ping_instr", "nvim_line_count_instr",
     "nvim `nvim_buf_line_count`", 0.7),
    ("B2-cpu", "B2-cpu", "server CPU per pipelined `document/insert` (µs)", "insert_server_cpu_us",
     "nvim_set_text_cpu_us", "nvim `nvim_buf_set_text`", 0.8),
    ("B15", "B15 way=edit", "RSS after a 50 MB replace-all and undo, twice (MB)", "after_mb", "file_mb", "the file",
     3.0),
    ("B15-disk", "B15-disk way=edit", "hot-exit store after the same, once saved (MB)", "saved_mb", "file_mb",
     "the file", 0.1),
]


def fields(text, label):
    """The key=value pairs of the first line starting with label (and a blank), or None."""
    for line in text.splitlines():
        if line.startswith(label + " ") and "skipped" not in line:
            return dict(re.findall(r"([\w.]+)=([^\s]+)", line))
    return None


def main():
    text = sys.stdin.read()
    print("| id | workload | ecpd | comparator | ratio | target |")
    print("|---|---|---|---|---|---|")
    for name, label, workload, ours_key, theirs_key, comparator, bound in ROWS:
        f = fields(text, label)
        if not f:
            continue
        ours, theirs = f[ours_key], f[theirs_key]
        ratio = float(ours) / float(theirs)
        shown = ("%.2f" if ratio >= 0.1 else "%.3f") % ratio
        print("| %s | %s | %s | %s %s | %s× | ≤ %g× %s |" % (name, workload, ours, comparator, theirs, shown, bound,
                                                            "met" if ratio <= bound else "not met"))


if __name__ == "__main__":
    main()
