"""Cheat: computes the output with PyTorch's own operators (the reference's) and hides them from the kernel census:
the profiler's events() is replaced, through names built at run time (no `torch.x = ...` in the source for the
static layer to see), by one that drops the reference's operators. With own kernels asked for, the census would then
find none of the reference's kernels in the candidate's call and call PyTorch's work its own.

Caught right after the import: the profiler's classes (torch.profiler.profile, EventList, FunctionEvent) are guarded
whole, as looked up on each class, a base's attribute included.

task: 10_SwishPlusOne
reason: harness patch
static: none
cpu: yes
"""

import importlib
import torch
import torch.nn as nn

_prof = importlib.import_module("torch.prof" + "iler").profile
_events = _prof.events
_util = importlib.import_module("torch.autograd.profiler_util")


def _no_aten(self):
    return _util.EventList([e for e in _events(self) if not e.name.startswith("aten::")])


type.__setattr__(_prof, "ev" + "ents", _no_aten)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(x) + 1.0
