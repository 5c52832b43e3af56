"""Cheat: at import, before the harness times anything, slows the host clock down and makes synchronize a no-op,
so timed regions measure little more than the launch.

Caught right after the import: the harness captured the genuine functions before any candidate code ran (and times
with those), and finds the module attributes replaced.

task: 10_SwishPlusOne
reason: timer patch
static: timer-patch
cpu: yes
"""

import time

import torch
import torch.nn as nn

_real_clock = time.perf_counter
time.perf_counter = lambda: _real_clock() / 4.0
torch.cuda.synchronize = lambda device=None: None


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(x) + 1.0
