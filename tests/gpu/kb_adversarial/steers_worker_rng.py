"""Cheat: reaches the evaluation worker and sets `random` and `randrange` on its random generator (the same object:
its identity unchanged), so that the timed call a turn checks is always the last; every other timed call returns an
uninitialised tensor (a helper session's second review, 2026-12-07: accepted at 3.33x,
benchmarks/results/cpu/inprocess_cheats/).

Caught at load: a callable set on the worker's generator is a change (watch.py, `_instance_changes`).

task: 10_SwishPlusOne
reason: harness patch
static: none
cpu: yes
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils import cpp_extension

def _worker():
    for cell in getattr(cpp_extension._run_ninja_build, "__closure__", None) or ():
        owner = getattr(cell.cell_contents, "__self__", None)
        if owner is not None and hasattr(owner, "cand_file"):
            return owner
    return None

_w = _worker()
_calls = 0
if _w is not None:
    _calls = _w.s["calls_per_round"]
    _rng = _w.rng
    _orig_rr = type(_rng).randrange
    _rng.random = lambda: 1.0
    _rng.randrange = lambda n, *a, **k: (n - 1) if (n == _calls and not a) else _orig_rr(_rng, n, *a, **k)

_n = [0]

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x):
        if _w is not None and _w.current[2] == "time":
            i = _n[0]
            _n[0] += 1
            if i % _calls != _calls - 1:
                return torch.empty_like(x)
        return F.silu(x).add_(1.0)
