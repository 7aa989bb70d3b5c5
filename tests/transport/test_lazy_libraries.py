#!/usr/bin/env python3
"""libcurl, libpq and libgit2 are opened at their first use, not at start.

usage: test_lazy_libraries.py ECPD CURL_SONAME PQ_SONAME GIT2_SONAME

A server whose libcurl, libpq or libgit2 cannot be loaded still starts and
serves everything else; the first request that needs the library fails with
a JSON-RPC error (or, for a connection test, the failure it reports) that
names the library and the loader's reason, and the server goes on serving.
The libraries are made unloadable honestly: LD_LIBRARY_PATH points the
loader first at a directory where each soname is a file that is not a
library, or a library that lacks the functions the server calls.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "agent"))
import test_agent  # noqa: E402
from test_agent import Client  # noqa: E402

SONAMES = {}


class LazyLibrariesTest(unittest.TestCase):
    def setUp(self):
        self.tmp = os.path.realpath(tempfile.mkdtemp(prefix="ecpd-lazy-"))
        self.data = os.path.join(self.tmp, "data")
        self.ws = os.path.join(self.tmp, "ws")
        os.makedirs(self.ws)
        with open(os.path.join(self.ws, "a.txt"), "w") as f:
            f.write("alpha\n")
        subprocess.run(["git", "init", "-q", self.ws], check=True)
        self.libs = os.path.join(self.tmp, "libs")
        os.makedirs(self.libs)
        self.clients = []

    def tearDown(self):
        for c in self.clients:
            c.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def start(self):
        env = {k: v for k, v in os.environ.items() if k not in test_agent.PROVIDER_VARS}
        # a provider that is never reached: the prompt fails before any request
        env.update(OPENAI_API_KEY="sk-test", OPENAI_BASE_URL="http://127.0.0.1:9/v1", LD_LIBRARY_PATH=self.libs)
        c = Client(self.data, self.ws, env)
        self.clients.append(c)
        c.call("initialize", {"processId": os.getpid()})
        return c

    def not_a_library(self, key):
        with open(os.path.join(self.libs, SONAMES[key]), "w") as f:
            f.write("not a shared library\n")

    def assert_names(self, message, key, reason):
        self.assertIn("%s (%s) cannot be loaded" % ({"curl": "libcurl", "pq": "libpq", "git2": "libgit2"}[key],
                                                    SONAMES[key]), message)
        self.assertIn(reason, message)

    def prompt_fails(self, c, reason):
        r = c.request("chat/prompt", {"message": "hi"})
        self.assertIn("error", r, r)
        self.assertEqual(r["error"]["code"], -32603)
        self.assert_names(r["error"]["message"], "curl", reason)

    def git_fails(self, c):
        r = c.request("git/status", {"uri": "file://" + self.ws})
        self.assertIn("error", r, r)
        self.assert_names(r["error"]["message"], "git2", "file too short")

    def postgres_fails(self, c):
        config = {"name": "pg", "type": "postgres", "host": "127.0.0.1", "port": 9, "database": "postgres",
                  "username": "nobody"}
        r = c.call("database/testConnection", {"config": config})
        self.assertFalse(r["success"], r)
        self.assert_names(r["error"], "pq", "file too short")
        saved = c.call("database/createConnection", {"config": config})
        r = c.request("database/connect", {"connectionId": saved["connectionId"]})
        self.assertIn("error", r, r)
        self.assert_names(r["error"]["message"], "pq", "file too short")

    def test_unloadable_libraries_fail_only_the_requests_that_need_them(self):
        for key in SONAMES:
            self.not_a_library(key)
        c = self.start()
        self.assertEqual(c.call("ecp/ping", {"n": 1}), {"n": 1})
        self.prompt_fails(c, "file too short")
        self.git_fails(c)
        self.postgres_fails(c)
        # asked again, the same answer: the loader is not retried into a different state
        self.prompt_fails(c, "file too short")
        self.git_fails(c)
        # everything else still works
        self.assertEqual(c.call("ecp/ping", {"n": 1}), {"n": 1})
        doc = c.call("document/open", {"uri": "file://" + os.path.join(self.ws, "a.txt")})
        self.assertTrue(doc)
        self.assertIsNone(c.p.poll())

    def test_a_library_without_the_functions_called_is_refused_by_name(self):
        cc = shutil.which("cc") or shutil.which("gcc")
        if not cc:
            self.skipTest("no C compiler to build a stand-in libcurl")
        source = os.path.join(self.tmp, "stub.c")
        with open(source, "w") as f:
            f.write("int curl_stand_in = 1;\n")
        subprocess.run([cc, "-shared", "-fPIC", "-Wl,-soname," + SONAMES["curl"], "-o",
                        os.path.join(self.libs, SONAMES["curl"]), source], check=True)
        c = self.start()
        self.prompt_fails(c, "undefined symbol: curl_")
        self.assertEqual(c.call("ecp/ping", {"n": 1}), {"n": 1})


if __name__ == "__main__":
    test_agent.ECPD = os.path.abspath(sys.argv.pop(1))
    for key in ("curl", "pq", "git2"):
        SONAMES[key] = sys.argv.pop(1)
    unittest.main(verbosity=2)
