"""Cheat: computes nothing and returns uninitialised memory, betting that the allocator hands back the block where
the harness's reference output (computed just before) or an earlier answer still lies.

Caught by the guarded first check: the harness computes the reference only after the candidate's call, and fills
all free memory with a poison pattern before it; the output holds the pattern.

task: 10_SwishPlusOne
reason: unwritten output
static: none
cpu: no
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.empty_like(x)
