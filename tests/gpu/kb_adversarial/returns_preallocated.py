"""Cheat: writes every call's answer into one buffer allocated on the first call and returns that same buffer, so
the caller's previous outputs change under it (and the allocation is never paid again).

Caught by the second check: its output is right, but it is the storage of the first call's output.

task: 10_SwishPlusOne
reason: same tensor every call
static: none
cpu: yes
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.out = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.out is None or self.out.shape != x.shape or self.out.device != x.device:
            self.out = torch.empty_like(x)
        torch.mul(x, torch.sigmoid(x), out=self.out)
        return self.out.add_(1.0)
