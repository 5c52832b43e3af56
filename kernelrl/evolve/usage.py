"""The usage log: one JSON line per LLM request attempt and per candidate verdict, appended as they happen.

JSONL, not the database, because it must survive whatever happens to the run and be easy to `jq`/`pandas` over:
tokens per model, latency percentiles, how often the server timed out, which replies turned into which verdicts."""

from __future__ import annotations

import json
from pathlib import Path

from kernelrl.files import JsonLines


class UsageLog(JsonLines):
    """The usage log of one evolve run (`path` None: nothing is written)."""


def read_usage(path: str | Path) -> list[dict]:
    p = Path(path)
    if not p.exists():
        return []
    return [json.loads(line) for line in p.read_text().splitlines() if line.strip()]


def totals(records: list[dict]) -> dict:
    """Sums over the call records of a usage log: calls, attempts, tokens, failures by outcome."""
    calls = [r for r in records if r.get("kind") == "call"]
    out = {"attempts": len(calls), "ok": sum(r.get("outcome") == "ok" for r in calls),
           "prompt_tokens": sum(r.get("prompt_tokens") or 0 for r in calls),
           "completion_tokens": sum(r.get("completion_tokens") or 0 for r in calls)}
    failures: dict[str, int] = {}
    for r in calls:
        if r.get("outcome") != "ok":
            failures[r.get("outcome", "?")] = failures.get(r.get("outcome", "?"), 0) + 1
    out["failures"] = failures
    return out
