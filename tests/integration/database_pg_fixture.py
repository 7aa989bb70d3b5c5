#!/usr/bin/env python3
"""Runs a test binary against a throw-away PostgreSQL cluster.

initdb's a cluster in a temporary directory as an unprivileged user (the
`postgres` system user when run as root), starts it on a free port with
password authentication, runs the test with ECPD_PG_PORT and ECPD_PG_PASSWORD
set, then stops the cluster and removes it, whatever the test did.

usage: database_pg_fixture.py TEST_BINARY
"""
import os
import shutil
import socket
import subprocess
import sys
import tempfile

BIN = "/usr/lib/postgresql/15/bin"
PASSWORD = "s3cret-for-tests"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def as_owner(args):
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--"] + args
    return args


def main():
    if not os.path.exists(os.path.join(BIN, "initdb")):
        print("PostgreSQL 15 is not installed (sh third_party/install-deps.sh)", file=sys.stderr)
        return 1
    top = tempfile.mkdtemp(prefix="ecpd-pg-")
    os.chmod(top, 0o755)
    data = os.path.join(top, "pgdata")
    os.mkdir(data)
    pwfile = os.path.join(top, "pw")
    with open(pwfile, "w") as f:
        f.write(PASSWORD + "\n")
    os.chmod(pwfile, 0o644)
    if os.geteuid() == 0:
        shutil.chown(data, "postgres", "postgres")
    port = free_port()
    started = False
    try:
        subprocess.run(as_owner([os.path.join(BIN, "initdb"), "-D", data, "-U", "tester", "--pwfile", pwfile,
                                 "-A", "scram-sha-256", "--no-sync"]),
                       check=True, stdout=subprocess.DEVNULL)
        subprocess.run(as_owner([os.path.join(BIN, "pg_ctl"), "-D", data, "-l", os.path.join(data, "log"), "-w",
                                 "-o", f"-p {port} -k {data} -c listen_addresses=127.0.0.1 -c fsync=off",
                                 "start"]),
                       check=True, stdout=subprocess.DEVNULL)
        started = True
        env = dict(os.environ, ECPD_PG_PORT=str(port), ECPD_PG_PASSWORD=PASSWORD)
        return subprocess.run([sys.argv[1]], env=env).returncode
    finally:
        if started:
            subprocess.run(as_owner([os.path.join(BIN, "pg_ctl"), "-D", data, "-m", "immediate", "stop"]),
                           stdout=subprocess.DEVNULL)
        shutil.rmtree(top, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
