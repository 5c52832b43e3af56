"""Cheat: counts its calls. Harnesses check the first few calls and then time many more, so after the first 14 it
stops computing and returns its last answer for the same shape.

Caught during timing: the timed calls whose outputs are checked are chosen at random with the run's secret,
after the call's inputs are made, so the candidate cannot tell a checked call from any other.

task: 13_RMSNorm
reason: during timing: wrong values
static: none
cpu: yes
"""

import torch
import torch.nn as nn

HONEST_CALLS = 14


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.eps = eps
        self.calls = 0
        self.last = {}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        if self.calls > HONEST_CALLS and tuple(x.shape) in self.last:
            return self.last[tuple(x.shape)]
        out = x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.weight
        self.last[tuple(x.shape)] = out
        return out
