"""Verdict categories as the proposer and the RL reward see them: what a failed candidate's verdict means, so
prompts can group negative examples and the loop can tell a build error (worth one repair turn) from a cheat (worth
remembering, never repairing).

The evaluators' verdicts are typed keys (`kernelrl.harness.verdicts`); this module maps their categories to the
loop's names and adds the two verdicts only the loop gives: `malformed` (no usable code in the reply) and
`rejected` (the static screen)."""

from __future__ import annotations

from kernelrl.harness.verdicts import Category, category_of

CATEGORIES = {
    "ok": "verified and timed",
    "malformed": "the reply held no usable code (or a kernel spec that does not parse)",
    "compile": "did not compile or does not meet the file contract",
    "rejected": "a known cheat, found by the static screen",
    "defence": "caught by a dynamic anti-hacking check of the evaluator",
    "wrong": "wrong results",
    "crash": "crashed or hung the GPU worker",
    "failed": "failed otherwise (a shape it declines, or the evaluator's own failure)",
}

_LOOP_NAMES = {Category.OK: "ok", Category.BUILD: "compile", Category.CORRECTNESS: "wrong",
               Category.DEFENCE: "defence", Category.CRASH: "crash", Category.UNSUPPORTED: "failed",
               Category.INFRASTRUCTURE: "failed"}
_LOOP_ONLY = (("malformed", ("malformed", "bad spec")), ("rejected", ("static screen", "static checks")),
              ("compile", ("syntax:",)))


def categorize(verdict) -> str:
    """The loop's category of a record (its `verdict` key) or of a reason line ('ok' for None)."""
    reason = verdict.get("reason") if isinstance(verdict, dict) else verdict
    if isinstance(reason, str):
        for name, prefixes in _LOOP_ONLY:
            if reason.startswith(prefixes):
                return name
    return _LOOP_NAMES[category_of(verdict)]


def repairable(category: str) -> bool:
    return category == "compile"
