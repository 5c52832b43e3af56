"""A client for OpenAI-compatible chat servers (vLLM, SGLang, hosted APIs), built on the `openai` package.

The SDK's own retries are switched off (max_retries=0) so that every attempt is counted against the budget, logged
with its latency and outcome, and backed off exponentially here: timeouts, dropped connections, 429 and 5xx are
retried; any other HTTP error (bad model name, bad key, bad request) is final. Requests run on a thread pool no
wider than `concurrency`, so a model server is never sent more work at once than it was configured for."""

from __future__ import annotations

import itertools
import json
import os
import random
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Callable, Mapping

from kernelrl.evolve.budget import Budget
from kernelrl.evolve.usage import UsageLog

ENV_BASE_URL = "KERNELRL_LLM_BASE_URL"
ENV_MODEL = "KERNELRL_LLM_MODEL"
ENV_API_KEY = "OPENAI_API_KEY"
DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"  # `vllm serve MODEL --port 8000` on this machine


class LLMError(RuntimeError):
    """The model server cannot be used at all (missing package, no model, bad settings); one line says why."""


@dataclass
class LLMConfig:
    base_url: str = DEFAULT_BASE_URL
    model: str = ""  # empty: the only model the server lists (a vLLM server serves one)
    api_key: str = "EMPTY"  # vLLM and SGLang accept any key unless started with --api-key
    temperature: float = 0.7
    top_p: float = 0.95
    max_tokens: int = 16384  # a reply's tokens at most; with context_tokens, also what every prompt leaves free
    context_tokens: int | None = None  # the model's context window (vLLM's --max-model-len); None: not fitted
    tokenizer: str = "chars:3"  # how prompts are counted: a tokenizer.json path, "server", or chars:N (tokens.py)
    max_tokens_field: str = "max_tokens"  # some hosted reasoning models want "max_completion_tokens"
    timeout_s: float = 900.0  # per attempt: a long kernel with its analysis takes minutes on a busy server
    retries: int = 4
    backoff_s: float = 2.0
    backoff_max_s: float = 60.0
    concurrency: int = 4
    seed: int | None = None
    extra_body: dict = field(default_factory=dict)  # server-specific sampling (top_k, repetition_penalty, ...)

    @classmethod
    def resolve(cls, cli: Mapping | None = None, file: str | Path | None = None,
                env: Mapping[str, str] = os.environ) -> "LLMConfig":
        """Defaults, then the environment, then a JSON config file, then command-line values (None = not given)."""
        values: dict = {}
        if env.get(ENV_BASE_URL):
            values["base_url"] = env[ENV_BASE_URL]
        if env.get(ENV_MODEL):
            values["model"] = env[ENV_MODEL]
        if env.get(ENV_API_KEY):
            values["api_key"] = env[ENV_API_KEY]
        if file:
            try:
                loaded = json.loads(Path(file).read_text())
            except (OSError, ValueError) as exc:
                raise LLMError(f"LLM config {file}: cannot read it as JSON ({exc})") from None
            if not isinstance(loaded, dict):
                raise LLMError(f"LLM config {file}: expected a JSON object")
            known = {f.name for f in fields(cls)}
            unknown = sorted(set(loaded) - known)
            if unknown:
                raise LLMError(f"LLM config {file}: unknown key {', '.join(unknown)}; "
                               f"known: {', '.join(sorted(known))}")
            values.update(loaded)
        values.update({k: v for k, v in (cli or {}).items() if v is not None})
        cfg = cls(**values)
        cfg.validate()
        return cfg

    def validate(self) -> None:
        if not self.base_url.startswith(("http://", "https://")):
            raise LLMError(f"base URL {self.base_url!r} is not an http(s) URL; e.g. http://127.0.0.1:8000/v1")
        if self.concurrency < 1 or self.retries < 0 or self.timeout_s <= 0 or self.max_tokens < 1:
            raise LLMError("concurrency and max_tokens must be at least 1, retries at least 0, the timeout positive")
        if self.context_tokens is not None and self.context_tokens <= self.max_tokens:
            raise LLMError(f"context_tokens {self.context_tokens} leaves no room for a prompt beside max_tokens "
                           f"{self.max_tokens}: lower max_tokens (a 32k-context model: max_tokens 8192 or so)")
        if self.max_tokens_field not in ("max_tokens", "max_completion_tokens"):
            raise LLMError("max_tokens_field must be max_tokens or max_completion_tokens")

    def public(self) -> dict:
        """The settings worth recording with a run: everything but the key."""
        d = asdict(self)
        d.pop("api_key")
        return d


@dataclass
class Completion:
    """One logical request's result after its retries: `text` when the server answered, else `error`."""

    request_id: int
    purpose: str
    text: str | None = None
    error: str | None = None
    outcome: str = "ok"  # ok, timeout, connection, rate_limited, http_NNN, budget, error
    finish_reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0  # of the attempt that answered (or the last one)
    attempts: int = 0
    meta: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.text is not None


def _classify(exc: BaseException) -> tuple[str, bool, float | None, str]:
    """(outcome, retryable, server's Retry-After in seconds, one-line message) for an exception of the SDK."""
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return "timeout", True, None, "the request timed out"
    if isinstance(exc, openai.APIConnectionError):
        return "connection", True, None, f"cannot reach the server: {exc}"
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        retry_after = None
        try:
            retry_after = float(exc.response.headers.get("retry-after", ""))  # none: ValueError
        except (TypeError, ValueError, AttributeError):
            pass
        text = _status_text(exc)
        if status == 429:
            return "rate_limited", True, retry_after, f"rate limited (429): {text}"
        return f"http_{status}", status >= 500, retry_after, f"HTTP {status}: {text}"
    return "error", False, None, f"{type(exc).__name__}: {exc}"


# vLLM's and OpenAI's refusal of a request longer than the context: "maximum context length is 32768 tokens.
# However, you requested 33000 tokens (25000 in the messages, 8000 in the completion)"
_CONTEXT = re.compile(r"maximum context length is (\d+) tokens.*?(\d+) (?:tokens )?in the messages", re.S | re.I)
MIN_RETRY_TOKENS = 1024  # a refused request is retried with fewer reply tokens only if at least this many are left


def _fits_after_all(message: str, asked: int) -> int | None:
    """The reply tokens a context-exceeded request can have (its prompt as the server counted it), or None when
    the refusal is of another kind or leaves too little room for a kernel."""
    found = _CONTEXT.search(message or "")
    if not found:
        return None
    room = int(found.group(1)) - int(found.group(2)) - 16
    return room if MIN_RETRY_TOKENS <= room < asked else None


def _status_text(exc) -> str:
    """The server's error message (vLLM and OpenAI nest it under "error"), one line."""
    body = getattr(exc, "body", None)
    msg = None
    if isinstance(body, dict):
        err = body.get("error")
        msg = err.get("message") if isinstance(err, dict) else err
        msg = msg or body.get("message")
    text = str(msg or getattr(exc, "message", None) or exc).strip()
    return text.splitlines()[0][:300] if text else "no message"


class LLMClient:
    def __init__(self, cfg: LLMConfig, budget: Budget | None = None, usage: UsageLog | None = None, sdk=None,
                 sleep: Callable[[float], None] = time.sleep, rng: random.Random | None = None):
        self.cfg = cfg
        self.budget = budget or Budget()
        self.usage = usage or UsageLog(None)
        self.sleep = sleep
        self.rng = rng or random.Random()
        self._ids = itertools.count(1)
        self._id_lock = threading.Lock()
        if sdk is None:
            try:
                import openai
            except ImportError:
                raise LLMError("the LLM proposer needs the openai package: pip install -e '.[llm]'") from None
            sdk = openai.OpenAI(base_url=cfg.base_url, api_key=cfg.api_key or "EMPTY", timeout=cfg.timeout_s,
                                max_retries=0)
        self.sdk = sdk

    # -- the model -----------------------------------------------------------------------------------------------
    def resolve_model(self) -> str:
        """The configured model, or the server's only model when none is configured."""
        if self.cfg.model:
            return self.cfg.model
        try:
            served = [m.id for m in self.sdk.models.list()]
        except Exception as exc:
            raise LLMError(f"no model given and the server at {self.cfg.base_url} cannot list its models "
                           f"({_classify(exc)[3]}): pass --model NAME or set {ENV_MODEL}") from None
        if len(served) != 1:
            raise LLMError(f"no model given and the server serves {len(served)} models "
                           f"({', '.join(served) or 'none'}): pass --model NAME or set {ENV_MODEL}")
        self.cfg.model = served[0]
        return self.cfg.model

    # -- requests ------------------------------------------------------------------------------------------------
    def backoff_s(self, attempt: int, hint: float | None) -> float:
        """Exponential with jitter (attempt 0 → about backoff_s); a server's Retry-After wins, capped alike."""
        if hint is not None and hint >= 0:
            return min(hint, self.cfg.backoff_max_s)
        return min(self.cfg.backoff_max_s, self.cfg.backoff_s * 2 ** attempt) * (0.5 + self.rng.random() / 2)

    def complete(self, messages: list[dict], purpose: str = "propose", meta: dict | None = None) -> Completion:
        with self._id_lock:
            rid = next(self._ids)
        result = Completion(rid, purpose, meta=dict(meta or {}))
        why = self.budget.try_start_call()
        if why is not None:
            result.error, result.outcome = why, "budget"
            return result
        # a fitted prompt's request asks for what its prompt leaves of the context (meta["max_new_tokens"])
        new_tokens = min(self.cfg.max_tokens, int(result.meta.get("max_new_tokens") or self.cfg.max_tokens))
        kwargs: dict[str, Any] = {"model": self.cfg.model, "messages": messages,  # the SDK call's keywords
                                  "temperature": self.cfg.temperature, "top_p": self.cfg.top_p,
                                  self.cfg.max_tokens_field: new_tokens}
        if self.cfg.seed is not None:
            kwargs["seed"] = self.cfg.seed + rid
        if self.cfg.extra_body:
            kwargs["extra_body"] = self.cfg.extra_body
        for attempt in range(self.cfg.retries + 1):
            result.attempts = attempt + 1
            started = time.perf_counter()
            try:
                response = self.sdk.chat.completions.create(**kwargs)
            except Exception as exc:
                result.latency_s = time.perf_counter() - started
                outcome, retryable, hint, message = _classify(exc)
                result.outcome, result.error = outcome, message
                last = attempt == self.cfg.retries or not self.budget.time_left()
                self._log(result, attempt, outcome, message)
                fitted = _fits_after_all(message, kwargs[self.cfg.max_tokens_field])
                if fitted is not None and not last:  # the prompt was longer than counted: ask for fewer tokens
                    kwargs[self.cfg.max_tokens_field], result.outcome = fitted, "context_exceeded"
                    continue
                if not retryable or last:
                    return result
                self.sleep(self.backoff_s(attempt, hint))
                continue
            result.latency_s = time.perf_counter() - started
            choice = response.choices[0] if response.choices else None
            usage = getattr(response, "usage", None)
            result.prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
            result.completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
            self.budget.add_tokens(result.prompt_tokens + result.completion_tokens)
            result.text = (choice.message.content or "") if choice is not None else ""
            result.finish_reason = getattr(choice, "finish_reason", None)
            if not result.text.strip() and result.finish_reason != "length" and attempt < self.cfg.retries:
                # an overloaded server's empty answer: asked again (a reply cut off by max_tokens is the model's)
                result.outcome, result.error = "empty", "the server answered with an empty reply"
                self._log(result, attempt, "empty", result.error)
                result.text = None
                self.sleep(self.backoff_s(attempt, None))
                continue
            result.outcome, result.error = "ok", None
            self._log(result, attempt, "ok", None)
            return result
        return result

    def complete_many(self, requests: list[tuple[list[dict], str, dict]],
                      on_done: Callable[[Completion], None] | None = None) -> list[Completion]:
        """Run (messages, purpose, meta) requests, at most `concurrency` at once; results in request order.
        `on_done` is called on the calling thread as each one finishes."""
        if not requests:
            return []
        out: list[Completion | None] = [None] * len(requests)
        with ThreadPoolExecutor(max_workers=min(self.cfg.concurrency, len(requests))) as pool:
            futures = {pool.submit(self.complete, m, p, meta): i for i, (m, p, meta) in enumerate(requests)}
            for future in as_completed(futures):
                done = out[futures[future]] = future.result()
                if on_done:
                    on_done(done)
        return out  # type: ignore[return-value]  # every slot was filled above

    def _log(self, result: Completion, attempt: int, outcome: str, error: str | None) -> None:
        self.usage.write({"kind": "call", "request": result.request_id, "purpose": result.purpose,
                          "attempt": attempt + 1, "model": self.cfg.model, "base_url": self.cfg.base_url,
                          "outcome": outcome, "error": error, "latency_s": round(result.latency_s, 4),
                          "prompt_tokens": result.prompt_tokens if outcome == "ok" else 0,
                          "completion_tokens": result.completion_tokens if outcome == "ok" else 0,
                          "finish_reason": result.finish_reason if outcome == "ok" else None, **result.meta})
