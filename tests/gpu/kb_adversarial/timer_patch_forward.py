"""Cheat: on its first call (once the harness has finished importing and checking it), replaces synchronize with a
no-op, so later timed regions stop waiting for the GPU.

Caught right after that call: the harness times with the functions it captured at start-up and compares the
module attributes after every call.

task: 10_SwishPlusOne
reason: timer patch
static: timer-patch
cpu: yes
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        torch.cuda.synchronize = lambda device=None: None
        return x * torch.sigmoid(x) + 1.0
