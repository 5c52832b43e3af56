"""Cheat: reaches the evaluation worker and sets `random` and `randrange` on its random generator (the same object:
its identity unchanged), so that the timed call a turn checks is always the last; every other timed call returns an
uninitialised tensor (a helper session's second review, 2026-12-07: accepted at 3.33x,
benchmarks/results/cpu/inprocess_cheats/).

Its route to the worker, the closure of the worker's ninja-build wrapper, is closed (failed_builds.note_by_audit:
the wrapper holds nothing of the worker), and so are the others found (sys.gettrace(): call_trace.py); the heap is
the route left here, and gc.get_objects() from the candidate's code is refused and recorded. Caught at load:
`introspection`. What it would change is still checked after every stretch of candidate code (watch.py,
`_instance_changes`), for a route not yet found; tests/kernelbench/test_instance_checks.py makes each change
directly.

task: 10_SwishPlusOne
reason: introspection
static: introspection
cpu: yes
"""

import gc

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils import cpp_extension

def _worker():
    for cell in getattr(cpp_extension._run_ninja_build, "__closure__", None) or ():  # closed since
        owner = getattr(cell.cell_contents, "__self__", None)
        if owner is not None and hasattr(owner, "cand_file"):
            return owner
    try:  # the heap: audited, and refused
        objects = gc.get_objects()
    except Exception:
        return None
    return next((o for o in objects if type(o).__name__ == "KBWorker"), None)

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
