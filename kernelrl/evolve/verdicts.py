"""Verdict categories as the proposer and the RL reward see them: what a failed candidate's verdict means, so
prompts can group negative examples and the loop can tell a build error (worth one repair turn) from a cheat (worth
remembering, never repairing).

The evaluators' verdicts are typed keys (`kernelrl.harness.verdicts`); this module maps their categories to the
loop's names, and gives two keys a category of the loop's own: `malformed` (no usable code in the reply, or a
kernel spec that does not parse) and `rejected` (the static screen of either target)."""

from __future__ import annotations

from kernelrl.harness.verdicts import Category, Verdict, category_of, key_of

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
_LOOP_ONLY = {Verdict.MALFORMED: "malformed", Verdict.BAD_SPEC: "malformed", Verdict.STATIC_SCREEN: "rejected",
              Verdict.STATIC_CHECKS: "rejected"}


def categorize(verdict) -> str:
    """The loop's category of a record (by its `verdict` key), of a Verdict or of a key's value ('ok' for None). A
    reason line is not a key: text stored before keys were recorded goes through `verdicts.migrate_reason` first."""
    key = key_of(verdict)
    return _LOOP_ONLY[key] if key in _LOOP_ONLY else _LOOP_NAMES[category_of(verdict)]


def repairable(category: str) -> bool:
    return category == "compile"
