"""The referee (harness/referee.py) on HGEMM candidates: a candidate library the worker verified on a shape runs again
alone in a process of its own (run/referee_process.py), beside torch alone in another, and the ruling is written into
its records of that shape.

A library's native code runs inside the worker's process, where it can read the worker's memory (the channel's key,
its objects) with no audit event and report a result of its own; nothing it does there reaches these two processes.
Untimed input staging (CUDA-L2's padded copies, --untimed-padding) holds one staged input set where the referee
draws one per call: such a candidate gets a note, no ruling."""

from __future__ import annotations

import os

from kernelrl.harness.referee import Ruling, rule
from kernelrl.harness.verdicts import Verdict

LOAD_TIMEOUT_S = 180.0  # a side's first answer, at least
TORCH = "torch"  # the baseline a claimed speedup is read against (the reference's side times the same call)


def referee(problem, spec: dict, device: str, timeout_s: float, claimed_speedup: float | None) -> Ruling:
    """The ruling on candidate `spec` (its name and lib_path) on `problem`, run on `device` ("cuda", or "cpu" for a
    host-code library in tests)."""
    if spec.get("untimed_stage"):
        return Ruling(notes=["not refereed: untimed input staging holds one input set, the referee draws one a call"])
    payload = {"device": device, "problem": problem.to_dict(), "name": spec["name"],
               "lib_path": os.path.abspath(spec["lib_path"])}
    # a process start, torch, the device's context under the sandbox and the library's load come before any answer
    return rule(_serve, payload, timeout_s, claimed_speedup, load_timeout_s=max(3 * timeout_s, LOAD_TIMEOUT_S))


def _serve(conn, role, payload):
    from kernelrl.run.referee_process import serve  # imports torch: in the child only
    serve(conn, role, payload)


def claimed_speedup(records: list[dict], name: str, candidates: set[str] | None = None) -> float | None:
    """The worker's speedup of candidate `name` in the first mode where it was verified and timed: over torch (the
    call the referee times beside it), else over the first verified baseline there (a cuBLAS call, about torch's
    speed; none of `candidates`)."""
    others = candidates or {name}
    for mode in dict.fromkeys(r["mode"] for r in records):
        here = [r for r in records if r["mode"] == mode and r.get("verified") and r.get("time_us_median")]
        mine = next((r["time_us_median"] for r in here if r["method"] == name), None)
        base = next((r["time_us_median"] for r in here if r["method"] == TORCH), None) or \
            next((r["time_us_median"] for r in here if r["method"] not in others), None)
        if mine and base:
            return base / mine
    return None


def to_referee(records: list[dict], candidates: set[str]) -> list[str]:
    """The candidates verified in any record of a shape: an acceptance in one mode is what a forged report would be,
    whatever it says of the others (one failed mode must not keep the referee away)."""
    return list(dict.fromkeys(r["method"] for r in records if r["method"] in candidates and r.get("verified")))


def apply(records: list[dict], name: str, ruling: Ruling) -> list[dict]:
    """Candidate `name`'s records of one shape with the ruling written in (changed copies; the rest untouched): a
    `referee` verdict makes each unverified with its reason; a speed not believed scales its times; notes and the
    runner-timed speedup go in `extra`."""
    out = []
    for r in records:
        if r["method"] != name:
            continue
        r = {**r, "extra": {**(r.get("extra") or {})}}
        r["extra"]["referee_speedup"] = ruling.speedup
        if ruling.seconds is not None:
            r["extra"]["referee_s"] = round(ruling.seconds, 2)
        if ruling.notes:
            r["extra"]["notes"] = [*(r["extra"].get("notes") or ()), *(f"referee: {n}" for n in ruling.notes)]
        if ruling.verdict is not None:
            r.update(verified=False, verdict=Verdict.REFEREE.value, detail=ruling.detail,
                     reason=Verdict.REFEREE.reason(ruling.detail))
        elif ruling.scale:
            for key in ("time_us_median", "time_us_p10", "time_us_p90"):
                if r.get(key):
                    r[key] = r[key] * ruling.scale
            if r.get("tflops"):
                r["tflops"] = r["tflops"] / ruling.scale
        out.append(r)
    return out
