"""A scripted OpenAI-compatible chat server on loopback, for the evolve tests (stdlib only).

POST /v1/chat/completions answers with the next item of a script (or what a function of the request returns):
a completion with usage, an HTTP error (optionally with Retry-After), or either after a delay that outlasts the
client's timeout. GET /v1/models lists the served models. Every request body is kept for assertions."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from kernelrl.evolve.budget import Budget
from kernelrl.evolve.client import LLMClient, LLMConfig
from kernelrl.evolve.hgemm_target import HgemmTarget
from kernelrl.evolve.loop import Evolver
from kernelrl.evolve.population import Population
from kernelrl.evolve.usage import UsageLog
from kernelrl.workloads.hgemm import parse_shapes

ROOT = Path(__file__).resolve().parent.parent
GOOD = (ROOT / "examples" / "hgemm_wmma.cu").read_text()
# The same kernel with its closing `}  // extern "C"` cut off: the brace is never closed (a compile error).
BROKEN = GOOD[:GOOD.rindex("}  // extern")]
# Other kernels in code, not only in comments (a comment-only change is a copy: kernelrl/evolve/copies.py).
FIXED = GOOD.replace("    (void)workspace; (void)workspace_bytes;\n",
                     "    (void)workspace; (void)workspace_bytes; (void)0;  // repaired\n", 1)
BETTER = GOOD.replace("    (void)workspace; (void)workspace_bytes;\n",
                      "    (void)workspace; (void)workspace_bytes; (void)1;  // variant 2\n", 1)
# CUDA-L1's favourite trick: do the work on a private stream, so the timed stream looks idle.
CHEAT = GOOD.replace(
    "    (void)workspace; (void)workspace_bytes;\n",
    "    (void)workspace; (void)workspace_bytes;\n"
    "    static cudaStream_t side = nullptr;\n"
    "    if (!side) cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);\n"
    "    stream = side;\n", 1)
# Caching by pointer: right on the first call, then returns without computing while the inputs' addresses stay the
# same. No static rule sees it; the evaluator's during-timing check (inputs refilled in place) does.
CACHES_BY_POINTER = GOOD.replace(
    "    (void)workspace; (void)workspace_bytes;\n",
    "    (void)workspace; (void)workspace_bytes;\n"
    "    static const __half* last_a = nullptr;\n"
    "    if (A == last_a) return 0;\n"
    "    last_a = A;\n", 1)
assert CHEAT != GOOD and CACHES_BY_POINTER != GOOD
MALFORMED = "The faster kernels overlap loads with math. I would use a 3-stage pipeline, but no code today."


def answer(code: str, lang: str = "cuda", analysis: str = "The faster ones keep the tensor cores busy.") -> str:
    return f"{analysis}\n\nPlan: keep the tiles.\n\n```{lang}\n{code}```\n"


def reply(content: str, finish_reason: str = "stop", delay_s: float = 0.0) -> dict:
    return {"content": content, "finish_reason": finish_reason, "delay_s": delay_s}


def error(status: int, message: str = "server error", retry_after: float | None = None) -> dict:
    return {"status": status, "message": message, "retry_after": retry_after}


class FakeServer:
    def __init__(self, script=None, models=("scripted-model",)):
        self.script = list(script) if isinstance(script, (list, tuple)) else script
        self.models = list(models)
        self.requests: list[dict] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> "FakeServer":
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()

    def next_item(self, body: dict) -> dict:
        with self.lock:
            if callable(self.script):
                return self.script(body)
            if not self.script:
                return error(500, "the test script is exhausted")
            return self.script.pop(0)


def _handler(server: FakeServer):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _send(self, status: int, payload: dict, headers: dict | None = None):
            data = json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (its timeout): nothing to tell it

        def do_GET(self):
            if self.path.rstrip("/").endswith("/models"):
                self._send(200, {"object": "list", "data": [{"id": m, "object": "model", "created": 0,
                                                             "owned_by": "test"} for m in server.models]})
            else:
                self._send(404, {"error": {"message": "not found", "type": "not_found", "code": 404}})

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            with server.lock:
                server.requests.append(body)
                server.in_flight += 1
                server.max_in_flight = max(server.max_in_flight, server.in_flight)
            try:
                status, payload, headers = self._answer(body)
            finally:
                # Out of flight before the reply is written: the client may start its next request the moment it
                # reads this one, before this thread would get back to a `finally` after the write.
                with server.lock:
                    server.in_flight -= 1
            self._send(status, payload, headers)

        def _answer(self, body: dict) -> tuple[int, dict, dict]:
            item = server.next_item(body)
            if item.get("delay_s"):
                time.sleep(item["delay_s"])
            if item.get("status", 200) != 200:
                headers = {"Retry-After": str(item["retry_after"])} if item.get("retry_after") is not None else {}
                return item["status"], {"error": {"message": item["message"], "type": "server_error",
                                                  "code": item["status"]}}, headers
            content = item["content"]
            prompt = sum(len(m.get("content") or "") for m in body.get("messages", [])) // 4
            completion = max(1, len(content) // 4)
            return 200, {
                "id": f"chatcmpl-{len(server.requests)}", "object": "chat.completion", "created": int(time.time()),
                "model": body.get("model"),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                             "finish_reason": item.get("finish_reason", "stop")}],
                "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                          "total_tokens": prompt + completion}}, {}
    return Handler


def scripted_run(server: "FakeServer", db: Path, calls: int, config, evolver_class=Evolver, **evolver_kw) -> tuple:
    """One evolve run against `server` on a 64x64x64 HGEMM target (dummy runner, torch baseline), `calls` model
    calls at most: (evolver, summary, target); the population stays open on evolver.pop."""
    target = HgemmTarget(parse_shapes("64x64x64"), db, ["torch"], runner="dummy")
    usage = UsageLog(db.with_suffix(".usage.jsonl"))
    budget = Budget(max_calls=calls)
    client = LLMClient(LLMConfig(base_url=server.url, model="scripted-model", concurrency=1), budget, usage)
    evolver = evolver_class([target], Population(db), client, "- GPU: test", config, budget, usage=usage,
                            **evolver_kw)
    return evolver, evolver.run(), target
