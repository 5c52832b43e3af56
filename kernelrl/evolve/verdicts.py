"""Verdict categories: what a failed candidate's reason means, so prompts can group negative examples and the
loop can tell a compile error (worth one repair turn) from a cheat (worth remembering, never repairing).

Evaluator reasons are matched by their stable prefixes (kernelrl/verify/checks.py, run/worker.py, run/stats.py,
kernelbench/worker.py)."""

from __future__ import annotations

CATEGORIES = {
    "ok": "verified and timed",
    "malformed": "the reply held no usable code",
    "compile": "did not compile or does not meet the file contract",
    "rejected": "a known cheat, found by the static screen",
    "defence": "caught by a dynamic anti-hacking check of the evaluator",
    "wrong": "wrong results",
    "crash": "crashed or hung the GPU worker",
    "failed": "failed otherwise",
}

_PREFIXES = [
    ("malformed", ("malformed",)),
    ("compile", ("compile error", "compile timeout", "contract:", "syntax:", "CUDA-L2 adapter",
                 "exception: RuntimeError: Error building extension", "exception: ImportError",
                 "exception: OSError: ", "cannot load the built library", "no entry point")),
    ("rejected", ("static screen", "static checks")),
    ("defence", ("during timing", "hidden work", "out-of-bounds write", "modified its inputs", "modified inputs",
                 "unwritten output", "accumulator mismatch", "same tensor every call", "returned an input",
                 "tensor subclass", "inherits Model", "introspection", "thread", "timer patch", "harness patch",
                 "precision", "persisting L2", "reference fallback", "stale result", "specialised to the benchmark "
                 "shape", "stream order")),
    ("wrong", ("wrong values", "0/1 inputs", "output holds Inf", "NaN/Inf", "wrong shape", "wrong dtype",
               "wrong type", "wrong device")),
    ("crash", ("crash", "hang")),
]


def categorize(reason: str | None) -> str:
    """The category of a verdict reason ('ok' for None)."""
    if not reason:
        return "ok"
    text = reason.split(": ", 1)[1] if reason.startswith(("shape ", "on ")) and ": " in reason else reason
    for category, prefixes in _PREFIXES:
        if text.startswith(prefixes):
            return category
    return "failed"


def repairable(category: str) -> bool:
    return category == "compile"
