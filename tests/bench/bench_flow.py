#!/usr/bin/env python3
"""How long an `ecp/ping` waits for its answer on a connection that three
floods of notifications share: a terminal's output, a model's stream and a
50,000-file checkout under a watched folder, each alone and all together
(tests/transport/floods.py says what each is).

usage: bench_flow.py ECPD [PINGS]

Prints p50, p99 and the worst wait of each, with the machine's load average
when the flood began: on a shared machine only figures of the same run, at a
like load, compare. The aim is 50 ms at p99. ECPD_LOOP_TRACE=FILE (see
server/loop_trace.c) makes each server write its loop's turns there.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "transport"))
import floods  # noqa: E402


def main():
    ecpd = sys.argv[1]
    pings = int(sys.argv[2]) if len(sys.argv) > 2 else 400
    for flood in list(floods.FLOODS) + ["together"]:
        which = floods.FLOODS if flood == "together" else (flood,)
        load = os.getloadavg()[0]
        waits, counts, code, errors = floods.measure(ecpd, which, pings)
        if not waits:
            print("%-9s no ping overlapped the flood" % flood)
            continue
        print("%-9s ecp/ping wait: p50 %6.1f ms  p99 %6.1f ms  worst %6.1f ms  (%d pings, load %.1f)"
              % (flood, floods.percentile(waits, 50) * 1000, floods.percentile(waits, 99) * 1000,
                 max(waits) * 1000, len(waits), load), flush=True)


if __name__ == "__main__":
    main()
