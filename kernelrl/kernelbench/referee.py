"""The referee (harness/referee.py) on KernelBench pairs: an accepted pair's task reference and candidate, each in a
process of its own (kernelbench/referee_process.py), and the ruling written into the pair's records."""

from __future__ import annotations

import os

from kernelrl.harness.referee import Ruling, rule
from kernelrl.harness.tolerance import input_independent
from kernelrl.harness.verdicts import Verdict


def referee(task_path: str, candidate_path: str, settings, claimed_speedup: float | None, seeds: int = 2,
            failed_builds: list[dict] | None = None) -> Ruling:
    """The referee's ruling on one accepted pair (KBSettings `settings`); `claimed_speedup`: the worker's eager one;
    `failed_builds`: the build step's failed builds of this candidate (failed_builds.py), replayed as the worker
    does."""
    payload = {"device": settings.device, "task_path": os.path.abspath(task_path),
               "candidate_path": os.path.abspath(candidate_path), "tolerance_profile": settings.tolerance_profile,
               "writable": [os.path.abspath(w) for w in settings.writable_dirs],
               "extensions_dir": settings.extensions_dir and os.path.abspath(settings.extensions_dir),
               "failed_builds": failed_builds or []}
    return rule(_serve, payload, max(settings.hang_timeout_s, settings.load_timeout_s), claimed_speedup, seeds)


def _serve(conn, role, payload):
    from kernelrl.kernelbench.referee_process import serve  # imports torch: in the child only (the parent is
    serve(conn, role, payload)                               # torch-free, as kernelbench/pairs.py is)


def apply(records: list[dict], ruling: Ruling) -> None:
    """The ruling in a pair's candidate records: the runner-timed speedup and notes on each, the times scaled where
    the worker's speed is not believed; a `referee` verdict makes every one of them unverified, with its reason. The
    task verdicts the reference's process found (profiles that cannot tell the task's right answer from a trivial
    one) are added to the worker's, and the pair is not correct under those profiles: under the one that decides it,
    that is its verdict, as the worker gives it."""
    found = ruling.facts.get("task_verdicts") if isinstance(ruling.facts.get("task_verdicts"), dict) else {}
    notes = [*ruling.notes, *(n for n in ruling.facts.get("notes") or () if isinstance(n, str))]
    for r in records:
        if r.get("method") != "candidate":
            continue
        if found:
            r["task_verdicts"] = {**found, **(r.get("task_verdicts") or {})}
            if isinstance(r.get("profiles"), dict):
                r["profiles"] = {p: ok and p not in found for p, ok in r["profiles"].items()}
            deciding = r.get("profile") or "strict"
            if deciding in found and r.get("verified"):  # the worker's own verdict on such a pair, which a forged
                blind = Verdict.INPUT_INDEPENDENT if input_independent(found) else Verdict.TOLERANCE_BLIND  # report
                r.update(verified=False, verdict=blind.value, reason=blind.reason(found[deciding]))     # left out
        r["referee_speedup"] = ruling.speedup
        if ruling.seconds is not None:
            r.setdefault("extra", {})["referee_s"] = round(ruling.seconds, 2)
        if ruling.scale and ruling.verdict is None:  # the worker's speed not believed: the runner's ratio
            if r.get("speedup"):
                r["speedup"] = r["speedup"] / ruling.scale
            for key in ("candidate_us", "time_us_median"):
                if r.get(key):
                    r[key] = r[key] * ruling.scale
        if notes:  # beside the worker's own notes (the CSV's `notes`)
            extra = r.setdefault("extra", {})
            extra["notes"] = [*(extra.get("notes") or ()), *(f"referee: {n}" for n in notes)]
        if ruling.verdict is not None:
            r.update(verified=False, verdict=ruling.verdict.value, reason=f"{ruling.verdict.value}: {ruling.detail}")


def claimed_speedup(records: list[dict]) -> float | None:
    """The worker's speedup over eager in a pair's records (None where eager was not timed)."""
    return next((r["speedup"] for r in records if r.get("method") == "candidate" and r.get("baseline") == "eager"
                 and r.get("speedup")), None)
