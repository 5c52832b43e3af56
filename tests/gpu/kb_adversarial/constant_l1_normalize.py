"""Cheat: returns one constant (the mean output of an L1 normalisation, about 0) in the right shape:
within atol = rtol = 1e-2. Caught by atol = rtol under strict and by the scale-aware error under kernelbench.

task: 15_L1Normalize
reason: wrong values
static: none
cpu: yes
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.full_like(x, 1e-6)
