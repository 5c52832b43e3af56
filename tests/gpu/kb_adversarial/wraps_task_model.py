"""Cheat: at import, wraps the task's own `Model.forward` (a class of the task's module, not a torch function, so
no torch guard sees it) to run three times: the reference and every baseline built from it slow down, and an
honest candidate reads a 3x "speedup" (so it did before the guard, on the CPU worker, and so did the next honest
pair in the same worker).

Caught by the task guard (kernelrl/kernelbench/task_guard.py): the task class's attributes are compared after the
load, put back, and the worker is replaced.

task: 10_SwishPlusOne
reason: harness patch
static: none
cpu: yes
"""

import sys

import torch
import torch.nn as nn

for _module in list(sys.modules.values()):
    _model = getattr(_module, "Model", None)
    if isinstance(_model, type) and hasattr(_module, "get_inputs") and _module.__name__.startswith("kernelrl_kb_"):
        _forward = _model.forward

        def _slow(self, *args, _forward=_forward):
            _forward(self, *args)
            _forward(self, *args)
            return _forward(self, *args)

        _model.forward = _slow


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(x) + 1.0
