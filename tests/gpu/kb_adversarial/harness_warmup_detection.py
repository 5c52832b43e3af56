"""Cheat: tells checking from timing by whether the harness kept its previous output alive (a checker holds outputs
to compare them; a timing loop drops them). While its last output lives it computes honestly; once the harness has
let it go, it returns a stored answer for the same shape instead of computing.

Caught during timing: sampled timed calls are checked, and the candidate cannot tell which ones.

task: 13_RMSNorm
reason: during timing: wrong values
static: none
cpu: yes
"""

import weakref

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.eps = eps
        self.last_output = None
        self.stored = {}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        key = tuple(x.shape)
        dropped = self.last_output is not None and self.last_output() is None
        if dropped and key in self.stored:
            return self.stored[key].clone()
        out = x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.weight
        self.stored[key] = out.clone()
        self.last_output = weakref.ref(out)
        return out
