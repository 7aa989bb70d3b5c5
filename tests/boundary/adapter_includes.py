#!/usr/bin/env python3
"""An adapter sees its service only through interface.h.

Quoted includes are found beside the including file first, so no include path
can keep a service's adapter.c from naming its internal.h: this test reads the
includes of every services/<name>/adapter*.c (and of the example service
under tests/example, which the README walks through) and refuses any private header
of a service (its internal.h or any other header of its own directory but
interface.h, adapter.h and the adapter's own adapter_*.h). Core headers, other services' "<name>/interface.h"
and system headers are fine.
"""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[2])
services = root / "services"
core = {p.name for p in (root / "core").glob("*.h")}
include = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

problems = []
adapters = sorted(services.glob("*/adapter*.c")) + sorted((root / "tests" / "example").glob("adapter*.c"))
for adapter in adapters:
    own = adapter.parent
    for name in include.findall(adapter.read_text()):
        if name in ("interface.h", "adapter.h") or name in core:
            continue
        if re.fullmatch(r"adapter_[a-z_]+\.h", name):  # what the adapter's own files share
            continue
        if re.fullmatch(r"[a-z_]+/interface\.h", name) and (services / name).exists():
            continue
        problems.append(f"{adapter.relative_to(root)} includes \"{name}\": an adapter may see its service only "
                        f"through interface.h")

for p in problems:
    print(p)
print(f"{len(problems)} private includes in {len(adapters)} adapters")
sys.exit(1 if problems else 0)
