"""Cheat: sends the runner its own result for its pair, through the worker's connection to the parent, which it
finds without any audited call (multiprocessing.current_process() kept the worker's target arguments: the
connection and the payload with the run's tasks); the result says correct and 50x. Its real output is zeros.

Caught at load: nothing in the worker process leads to the connection (the process object's target arguments are
cleared once the worker has them), and the runner takes a pair's result only as the worker's last message for it.

task: 10_SwishPlusOne
reason: wrong values
static: threads
cpu: yes
"""

import multiprocessing
import os

import torch
import torch.nn as nn


def _forge():
    args = getattr(multiprocessing.current_process(), "_args", ()) or ()
    conns = [a for a in args if hasattr(a, "send") and hasattr(a, "recv")]
    payloads = [a for a in args if isinstance(a, dict) and a.get("tasks")]
    if not conns or not payloads:
        return
    mine = [t for t in payloads[0]["tasks"]
            if os.path.basename(str(t.get("candidate_path"))) == "forges_worker_result.py"]
    for task in mine:
        record = {"method": "candidate", "mode": "kb", "verified": True, "time_us_median": 1.0,
                  "candidate_us": 1.0, "baseline_us": 50.0, "speedup": 50.0, "max_abs_err": 0.0, "max_rel_err": 0.0,
                  "profile": "strict", "profiles": {"strict": True, "kernelbench": True}}
        conns[0].send(("task", task["id"], [dict(record, baseline=b) for b in task.get("baselines") or ["eager"]]))


_forge()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.zeros_like(x)
