"""Budgets for one evolve run: LLM calls, tokens and wall time.

Shared by the client's worker threads, so every check-and-reserve happens under one lock: two threads can never
both take the last call."""

from __future__ import annotations

import threading
import time


class Budget:
    """Limits for this invocation (None: unlimited). A later run of `kernelrl evolve` starts a fresh budget and
    continues the population where this one stopped."""

    def __init__(self, max_calls: int | None = None, max_tokens: int | None = None,
                 max_minutes: float | None = None, clock=time.monotonic):
        self.max_calls, self.max_tokens, self.max_minutes = max_calls, max_tokens, max_minutes
        self.clock = clock
        self.started = clock()
        self.calls = 0
        self.tokens = 0
        self._lock = threading.Lock()

    def elapsed_s(self) -> float:
        return self.clock() - self.started

    def exhausted(self) -> str | None:
        """Why no new call may start (one line), or None."""
        with self._lock:
            return self._why()

    def _why(self) -> str | None:
        if self.max_calls is not None and self.calls >= self.max_calls:
            return f"call budget spent ({self.calls} of {self.max_calls} calls)"
        if self.max_tokens is not None and self.tokens >= self.max_tokens:
            return f"token budget spent ({self.tokens} of {self.max_tokens} tokens)"
        if self.max_minutes is not None and self.elapsed_s() >= self.max_minutes * 60:
            return f"time budget spent ({self.max_minutes:g} min)"
        return None

    def try_start_call(self) -> str | None:
        """Reserve one call; returns None when reserved, else the reason it was refused."""
        with self._lock:
            why = self._why()
            if why is None:
                self.calls += 1
            return why

    def add_tokens(self, n: int) -> None:
        with self._lock:
            self.tokens += max(0, int(n or 0))

    def time_left(self) -> bool:
        return self.max_minutes is None or self.elapsed_s() < self.max_minutes * 60

    def calls_left(self) -> int | None:
        with self._lock:
            return None if self.max_calls is None else max(0, self.max_calls - self.calls)
