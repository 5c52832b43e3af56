"""Cheat: reaches the evaluation worker (as replaces_worker_judge does), empties its guard snapshot in place (the
entries list and the internals dict: the snapshot object keeps its identity), then replaces torch.sigmoid, which the
reference calls, with a slower one; the candidate itself computes honestly (a helper session's second review,
2026-12-07: accepted at 3.25x: benchmarks/results/cpu/inprocess_cheats/).

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
if _w is not None:
    _w.guard_snapshot.entries.clear()
    _w.guard_snapshot.internals.clear()
    _sig = torch.sigmoid
    def _slow(x, *a, **k):
        for _ in range(5):
            _sig(x)
        return _sig(x, *a, **k)
    vars(torch)["sigmoid"] = _slow

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x):
        return F.silu(x).add_(1.0)
