"""Training curves of a run: one record per GRPO step from its metrics log, the windows a learning claim is read
from (first 10 % of steps against the last 20 %; and, since a step's reward follows its shape, each revisited
shape against its first visit), and a PNG of reward, pass rate and cheat rate per step."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

from kernelrl.evolve.target import geomean
from kernelrl.train.metrics import read_metrics

STEP_FIELDS = ("step", "reward_mean", "reward_std", "pass_rate", "cheat_rate", "cheat_verified", "speedup_verified",
               "malformed_rate", "bad_spec_rate", "unsupported_rate", "copy_rate", "hack_rate", "compile_rate",
               "wrong_rate", "n", "shapes", "time")


def grpo_steps(metrics_path: str | Path) -> list[dict]:
    """The reward record of each GRPO step (the last one written for a step, should a resumed run repeat it)."""
    by_step: dict[int, dict] = {}
    for r in read_metrics(metrics_path):
        if r.get("kind") == "reward" and "grpo" in str(r.get("phase", "")):
            by_step[int(r["step"])] = {k: r.get(k) for k in STEP_FIELDS}
    return [by_step[s] for s in sorted(by_step)]


def _mean(values) -> float | None:
    xs = [v for v in values if v is not None and math.isfinite(v)]
    return statistics.fmean(xs) if xs else None


def windows(steps: list[dict], first: float = 0.1, last: float = 0.2) -> dict:
    """Means over the first `first` and the last `last` share of the steps, and their ratios."""
    n = len(steps)
    if not n:
        return {"steps": 0}
    head, tail = steps[:max(1, round(n * first))], steps[n - max(1, round(n * last)):]
    out: dict[str, float | None] = {"steps": n, "first_steps": len(head), "last_steps": len(tail)}
    for name, part in (("first", head), ("last", tail)):
        out[f"{name}_reward"] = _mean(s["reward_mean"] for s in part)
        out[f"{name}_pass_rate"] = _mean(s["pass_rate"] for s in part)
        out[f"{name}_cheat_rate"] = _mean(s["cheat_rate"] for s in part)
        out[f"{name}_speedup"] = geomean([s["speedup_verified"] for s in part])
        out[f"{name}_copy_rate"] = _mean(s.get("copy_rate") for s in part)
    out["cheat_verified_total"] = sum(s.get("cheat_verified") or 0 for s in steps)
    for key in ("reward", "speedup"):
        a, b = out[f"first_{key}"], out[f"last_{key}"]
        out[f"{key}_ratio"] = b / a if a and b is not None else None
    return {**out, **revisits(steps)}


def revisits(steps: list[dict]) -> dict:
    """A learning measure that factors out the shape: for every single-shape step whose shape the run drew
    before, the step's verified speedup over that shape's first visit; their geomean, and how many were faster."""
    first: dict[str, float] = {}
    ratios = []
    for s in steps:
        shapes, speedup = s.get("shapes") or [], s.get("speedup_verified")
        if len(shapes) != 1 or not speedup:
            continue
        if shapes[0] in first:
            ratios.append(speedup / first[shapes[0]])
        else:
            first[shapes[0]] = speedup
    return {"revisits": len(ratios), "revisit_speedup_ratio": geomean(ratios),
            "revisits_faster": sum(r > 1.0 for r in ratios)}


def plot(runs: dict[str, list[dict]], path: str | Path, smooth: int = 10) -> None:
    """Reward, pass rate and cheat rate per step for each run (a running mean over `smooth` steps)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(14, 3.6))
    for name, steps in runs.items():
        x = [s["step"] for s in steps]
        for ax, key in zip(axes, ("reward_mean", "pass_rate", "cheat_rate")):
            ys = [s[key] or 0.0 for s in steps]
            run = [statistics.fmean(ys[max(0, i - smooth + 1):i + 1]) for i in range(len(ys))]
            ax.plot(x, run, label=name)
            ax.set_title(f"{key} (running mean of {smooth})")
            ax.set_xlabel("GRPO step")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_steps(steps: list[dict], path: str | Path) -> None:
    Path(path).write_text("".join(json.dumps(s) + "\n" for s in steps))
