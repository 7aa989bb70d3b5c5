#!/usr/bin/env python3
"""B12: an agent turn against the scripted LLM streaming 10,000 chunks.

usage: bench_agent.py ECPD [CHUNKS]

For each server-sent event the mock writes, the time from the moment it left
the mock to the moment the matching text reached the client: as ECA's
chat/contentReceived (`ecpd --eca`, Content-Length framing) and as ACP's
session/update agent_message_chunk (`ecpd --acp`, newline-delimited). The mock
runs in its own process (CLOCK_MONOTONIC is the same clock in both); each
chunk's text is unique, so chunks and messages pair by text. Once with the
chunks paced 500 us apart (each chunk's own way through), once in one burst
(what queues behind it; the Python client's parsing is part of that figure).
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "agent"))
from mock_llm import MockLLM  # noqa: E402


def serve_mock(script_path, sent_path):
    """The mock's process: after each reply, writes when every chunk left."""
    with open(script_path) as f:
        mock = MockLLM(json.load(f))
    serve = mock.serve

    def serve_and_record(handler, reply):
        # each event goes out when written, as a streaming server's would
        # (Nagle would hold small writes for the client's delayed ACK)
        handler.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        serve(handler, reply)
        with open(sent_path + ".tmp", "w") as out:
            json.dump(mock.sent, out)
        os.rename(sent_path + ".tmp", sent_path)
    mock.serve = serve_and_record
    print("PORT %d" % mock.port, flush=True)
    threading.Event().wait()


def percentile(sorted_values, p):
    return sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * p))]


def run(ecpd, protocol, chunks, pace_us):
    tmp = tempfile.mkdtemp(prefix="ecpd-b12-")
    ws = os.path.join(tmp, "ws")
    os.makedirs(ws)
    texts = ["c%05d " % i for i in range(chunks)]
    script = os.path.join(tmp, "script.json")
    sent_path = os.path.join(tmp, "sent.json")
    with open(script, "w") as f:
        json.dump([{"text": texts, "delay": pace_us / 1e6}], f)
    mock = subprocess.Popen([sys.executable, __file__, "--mock", script, sent_path], stdout=subprocess.PIPE)
    port = int(mock.stdout.readline().split()[1])
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "OLLAMA_HOST", "ECPD_MODEL")}
    env.update(OPENAI_API_KEY="sk-bench", OPENAI_BASE_URL="http://127.0.0.1:%d/v1" % port)
    p = subprocess.Popen([ecpd, "--" + protocol, "--data-dir", os.path.join(tmp, "data")], cwd=ws, env=env,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    received = {}
    done = threading.Event()

    def send(msg):
        data = json.dumps(msg).encode()
        if protocol == "eca":
            p.stdin.write(b"Content-Length: %d\r\n\r\n" % len(data) + data)
        else:
            p.stdin.write(data + b"\n")
        p.stdin.flush()

    def read():
        f = p.stdout
        while True:
            if protocol == "eca":
                length = None
                while True:
                    line = f.readline()
                    if not line:
                        return
                    if not line.strip():
                        break
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                body = f.read(length)
            else:
                body = f.readline()
                if not body:
                    return
            now = time.monotonic()
            msg = json.loads(body)
            params = msg.get("params") or {}
            if msg.get("method") == "chat/contentReceived":
                c = params["content"]
                if c["type"] == "text" and params["role"] == "assistant":
                    received[c["text"]] = now
                elif c["type"] == "progress" and c["state"] == "finished":
                    done.set()
            elif msg.get("method") == "session/update":
                u = params["update"]
                if u["sessionUpdate"] == "agent_message_chunk":
                    received[u["content"]["text"]] = now
            elif msg.get("id") == 3 and protocol == "acp":
                done.set()
            elif "id" in msg and "result" in msg:
                replies[msg["id"]] = msg["result"]

    replies = {}
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    if protocol == "eca":
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"workspaceFolders": [{"uri": "file://" + ws, "name": "ws"}]}})
        send({"jsonrpc": "2.0", "id": 3, "method": "chat/prompt", "params": {"message": "stream"}})
    else:
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
        send({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": ws, "mcpServers": []}})
        deadline = time.time() + 10
        while 2 not in replies and time.time() < deadline:
            time.sleep(0.01)
        send({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
              "params": {"sessionId": replies[2]["sessionId"], "prompt": [{"type": "text", "text": "stream"}]}})
    ok = done.wait(120)
    deadline = time.time() + 10
    while not os.path.exists(sent_path) and time.time() < deadline:
        time.sleep(0.01)
    p.stdin.close()
    p.wait(10)
    mock.kill()
    mock.wait()
    if not ok or not os.path.exists(sent_path):
        raise SystemExit("B12 %s: the turn did not finish" % protocol)
    sent = {}  # the text of each event -> when it left the mock
    with open(sent_path) as f:
        for t, event in json.load(f):
            if event.startswith("data: {"):
                for choice in json.loads(event[6:]).get("choices", []):
                    text = choice.get("delta", {}).get("content")
                    if text:
                        sent[text] = t
    latencies = []
    for text in texts:
        if text not in sent or text not in received:
            raise SystemExit("B12 %s: chunk %r was not delivered" % (protocol, text))
        latencies.append((received[text] - sent[text]) * 1e6)
    shutil.rmtree(tmp, ignore_errors=True)
    latencies.sort()
    print("B12 protocol=%s chunks=%d pace_us=%d p50_us=%.0f p99_us=%.0f max_us=%.0f"
          % (protocol, chunks, pace_us, percentile(latencies, 0.5), percentile(latencies, 0.99), latencies[-1]), flush=True)


def main():
    if sys.argv[1] == "--mock":
        serve_mock(sys.argv[2], sys.argv[3])
        return
    ecpd = os.path.abspath(sys.argv[1])
    chunks = int(sys.argv[2]) if len(sys.argv) > 2 else 10000
    # paced (a chunk every 500 us, far faster than any model writes) the figure
    # is each chunk's own way through; unpaced, what queues behind a burst
    for pace_us in (500, 0):
        for protocol in ("eca", "acp"):
            run(ecpd, protocol, chunks, pace_us)


if __name__ == "__main__":
    main()
