#!/usr/bin/env python3
"""services/README.md walks through tests/example: every line of code it
quotes must be a line of the code (its comments aside), and the size it
states must be the example's size, counted as the README says: non-blank
lines that are not comments, #includes or header guards in interface.h,
local.c, adapter.h and adapter.c, and the non-comment lines of
CMakeLists.txt; of them, count_fd and count_work and the line that writes
the result count words, the rest is the shape.
"""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[2])
example = root / "tests" / "example"
readme = (root / "services" / "README.md").read_text()


def c_lines(text):
    """The counted lines of a C file, comments removed."""
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("//") or line.startswith("#include"):
            continue
        if re.fullmatch(r"#(ifndef|define) ECPD_\w+_H|#endif", line):
            continue
        out.append(line)
    return out


def cmake_lines(text):
    return [l.strip() for l in text.splitlines() if l.strip() and not l.strip().startswith("#")]


def normal(line):
    return " ".join(re.sub(r"/\*.*?\*/", "", line).split())


problems = []

# Quoted code: the example's files, and the services' sources for quotes of a real service.
sources = list(example.iterdir()) + [p for p in (root / "services").rglob("*") if p.suffix in (".c", ".h")]
known = {normal(l) for p in sources if p.is_file() for l in p.read_text(errors="replace").splitlines()}
for block in re.finditer(r"```(c|cmake)\n(.*?)```", readme, re.S):
    for line in block.group(2).splitlines():
        n = normal(re.sub(r"\s+#\s.*$", "", line) if block.group(1) == "cmake" else line)
        if n and n not in known:
            problems.append(f"README quotes a line the code does not have: {line.strip()}")

# The size.
counted = {name: c_lines((example / name).read_text()) for name in ("interface.h", "local.c", "adapter.h", "adapter.c")}
cmake = cmake_lines((example / "CMakeLists.txt").read_text())
total = sum(len(v) for v in counted.values()) + len(cmake)
local = counted["local.c"]
first = next(i for i, l in enumerate(local) if l.startswith("static int count_fd("))
after = next(i for i, l in enumerate(local) if l.startswith("static void count_done("))
words = after - first + 1  # count_fd, count_work, and the result's line in adapter.c
stated = re.search(r"The example is (\d+) lines.*?(\d+) of them count words.*?The\s+other (\d+) are the shape", readme, re.S)
if not stated:
    problems.append("README does not state the example's size")
elif tuple(map(int, stated.groups())) != (total, words, total - words):
    problems.append(f"README states {stated.groups()}; the example is {total} lines, {words} count words, "
                    f"{total - words} are the shape")

for p in problems:
    print(p)
print(f"example: {total} lines, {words} count words, {total - words} shape; {len(problems)} problems")
sys.exit(1 if problems else 0)
