"""A scripted LLM server for tests: OpenAI-compatible chat completions and
Anthropic messages, streamed as server-sent events, on 127.0.0.1.

Each request takes the next reply of the script (a list of dicts):
  {"text": ["Hel", "lo"]}                      text chunks, then the end marker
  {"reasoning": ["Hm", "m"], "text": [...]}     the model's reasoning first
  {"text": [...], "finish": "length"}          the finish_reason (stop_reason) given
  {"tools": [{"id", "name", "arguments": [fragments]}], "text": [...]}
  {"status": 429, "body": {...}}               an HTTP error
  {"cut": True}                                the stream stops before its end marker
  {"raw": "data: {not json\\n\\n"}               bytes sent as they are (then the end marker unless cut)
  {"delay": 0.2}                               seconds between chunks
  {"hang": True}                               after the chunks, wait until the client goes
Requests are recorded (path, headers, body) in `requests`.

Usage as a program: mock_llm.py SCRIPT.json [REQUESTS.jsonl] prints "PORT <n>" and
serves until killed; each request's body is appended to REQUESTS.jsonl as one line.
"""
import json
import socketserver
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler


def openai_events(reply):
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "mock"}
    out = []
    for chunk in reply.get("reasoning", []):
        out.append(dict(base, choices=[{"index": 0, "delta": {"reasoning_content": chunk}, "finish_reason": None}]))
    for chunk in reply.get("text", []):
        out.append(dict(base, choices=[{"index": 0, "delta": {"content": chunk}, "finish_reason": None}]))
    for i, tool in enumerate(reply.get("tools", [])):
        first = {"index": i, "id": tool["id"], "type": "function", "function": {"name": tool["name"], "arguments": ""}}
        out.append(dict(base, choices=[{"index": 0, "delta": {"tool_calls": [first]}, "finish_reason": None}]))
        for frag in tool["arguments"]:
            d = {"tool_calls": [{"index": i, "function": {"arguments": frag}}]}
            out.append(dict(base, choices=[{"index": 0, "delta": d, "finish_reason": None}]))
    finish = reply.get("finish") or ("tool_calls" if reply.get("tools") else "stop")
    out.append(dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": finish}]))
    out.append(dict(base, choices=[], usage={"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}))
    return ["data: %s\n\n" % json.dumps(e) for e in out], "data: [DONE]\n\n"


def anthropic_events(reply):
    ev = [("message_start", {"type": "message_start", "message": {"id": "msg_1", "type": "message",
                                                                     "role": "assistant", "content": [],
                                                                     "usage": {"input_tokens": 10, "output_tokens": 1}}})]
    index = 0
    if reply.get("reasoning"):
        ev.append(("content_block_start", {"type": "content_block_start", "index": 0,
                                           "content_block": {"type": "thinking", "thinking": ""}}))
        for chunk in reply["reasoning"]:
            ev.append(("content_block_delta", {"type": "content_block_delta", "index": 0,
                                               "delta": {"type": "thinking_delta", "thinking": chunk}}))
        ev.append(("content_block_stop", {"type": "content_block_stop", "index": 0}))
        index = 1
    if reply.get("text"):
        ev.append(("content_block_start", {"type": "content_block_start", "index": index,
                                           "content_block": {"type": "text", "text": ""}}))
        ev.append(("ping", {"type": "ping"}))
        for chunk in reply["text"]:
            ev.append(("content_block_delta", {"type": "content_block_delta", "index": index,
                                               "delta": {"type": "text_delta", "text": chunk}}))
        ev.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    for tool in reply.get("tools", []):
        ev.append(("content_block_start", {"type": "content_block_start", "index": index,
                                           "content_block": {"type": "tool_use", "id": tool["id"],
                                                             "name": tool["name"], "input": {}}}))
        for frag in [""] + list(tool["arguments"]):
            ev.append(("content_block_delta", {"type": "content_block_delta", "index": index,
                                               "delta": {"type": "input_json_delta", "partial_json": frag}}))
        ev.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    stop = reply.get("finish") or ("tool_use" if reply.get("tools") else "end_turn")
    ev.append(("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop},
                                 "usage": {"output_tokens": 5}}))
    return ["event: %s\ndata: %s\n\n" % (n, json.dumps(d)) for n, d in ev], \
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"


class MockLLM:
    def __init__(self, script=None, request_log=None):
        self.script = list(script or [])
        self.request_log = request_log
        self.requests = []
        self.lock = threading.Lock()
        self.sent = []  # (time, chunk) of every chunk written
        mock = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                with mock.lock:
                    try:
                        parsed = json.loads(body)
                    except ValueError:
                        parsed = None
                    mock.requests.append({"path": self.path, "headers": dict(self.headers), "body": parsed})
                    if mock.request_log:
                        with open(mock.request_log, "a") as log:
                            log.write(json.dumps(parsed) + "\n")
                    reply = mock.script.pop(0) if mock.script else {"status": 500, "body": {"error": {
                        "message": "the mock's script is exhausted"}}}
                mock.serve(self, reply)

        class Server(socketserver.ThreadingMixIn, socketserver.TCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self.server = Server(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def add(self, *replies):
        with self.lock:
            self.script.extend(replies)

    def serve(self, h, reply):
        status = reply.get("status", 200)
        if status != 200:
            data = json.dumps(reply.get("body", {"error": {"message": "mock error %d" % status}})).encode()
            h.send_response(status)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", str(len(data)))
            h.end_headers()
            h.wfile.write(data)
            return
        anthropic = h.path.endswith("/messages")
        chunks, end = (anthropic_events if anthropic else openai_events)(reply)
        if "raw" in reply:
            chunks = [reply["raw"]]
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Connection", "close")
        h.end_headers()
        delay = reply.get("delay", 0)
        try:
            for c in chunks:
                self.sent.append((time.monotonic(), c))  # the moment it starts to leave
                h.wfile.write(c.encode())
                h.wfile.flush()
                if delay:
                    time.sleep(delay)
            if reply.get("hang"):
                while True:  # until the client closes the connection
                    time.sleep(0.05)
                    h.wfile.write(b": keep-alive\n\n")
                    h.wfile.flush()
            if not reply.get("cut"):
                h.wfile.write(end.encode())
                h.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
        h.close_connection = True

    def close(self):
        self.server.shutdown()
        self.server.server_close()


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        m = MockLLM(json.load(f), sys.argv[2] if len(sys.argv) > 2 else None)
    print("PORT %d" % m.port, flush=True)
    threading.Event().wait()
