"""Training metrics: a summary of each batch of rewards, and a JSONL log of it and of the trainers' own logs.

JSONL because a run can die at any step and every line written before survives; `jq` or pandas read it as it
grows. Reward lines say how the policy is doing as a kernel writer (pass rate, hack rate, speedup percentiles),
trainer lines how the optimisation is doing (loss, learning rate, gradient norm)."""

from __future__ import annotations

import json
import math
import statistics
import time
from pathlib import Path

from kernelrl.files import JsonLines
from kernelrl.harness.stats import percentile
from kernelrl.train.reward import RewardResult

FAILURE_KINDS = ("malformed", "compile", "wrong", "crash", "timeout", "error")


def summarize(results: list[RewardResult]) -> dict:
    """Reward mean and spread, the share of each outcome, and percentiles of the verified kernels' speedups."""
    n = len(results)
    if not n:
        return {"n": 0}
    rewards = [r.reward for r in results]
    speedups = [r.speedup for r in results if r.ok and r.speedup is not None and math.isfinite(r.speedup)]
    out: dict[str, float | None] = {"n": n, "reward_mean": statistics.fmean(rewards),
           "reward_std": statistics.pstdev(rewards) if n > 1 else 0.0,
           "reward_min": min(rewards), "reward_max": max(rewards),
           "pass_rate": sum(r.ok for r in results) / n, "hack_rate": sum(r.hack for r in results) / n}
    for kind in FAILURE_KINDS:
        out[f"{kind}_rate"] = sum(r.category == kind for r in results) / n
    for q in (10, 50, 90):
        out[f"speedup_p{q}"] = percentile(speedups, q) if speedups else None
    out["speedup_max"] = max(speedups) if speedups else None
    return out


class MetricsLog(JsonLines):
    """The metrics log of one training run: numpy and torch scalars as numbers, non-finite ones as null."""

    def __init__(self, path: str | Path | None):
        super().__init__(path, default=_plain)


def _plain(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    try:
        return float(value)  # numpy and torch scalars
    except (TypeError, ValueError):
        return str(value)


def read_metrics(path: str | Path) -> list[dict]:
    p = Path(path)
    if not p.exists():
        return []
    return [json.loads(line) for line in p.read_text().splitlines() if line.strip()]


def trainer_callbacks(log: MetricsLog, phase: str, deadline: float | None = None, clock=time.monotonic) -> list:
    """TrainerCallbacks (built lazily: transformers is an optional dependency) that copy the trainer's logs into
    the metrics log and stop the phase, with a checkpoint, when the run's time budget is spent."""
    from transformers import TrainerCallback

    class MetricsCallback(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs:
                log.write({"kind": "trainer", "phase": phase, "step": state.global_step, **logs})

    class BudgetCallback(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if deadline is not None and clock() >= deadline:
                control.should_training_stop = True
                control.should_save = True
            return control

    return [MetricsCallback(), BudgetCallback()]
