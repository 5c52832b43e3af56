"""Cheat: honest for its first 12 calls, then returns its last answer for any input of the same shape:
within the kernelbench profile's atol = rtol on an L1 normalisation. Caught by the sampled checks of timed calls
(atol = rtol under strict, the scale-aware error under kernelbench).

task: 15_L1Normalize
reason: during timing: wrong values
static: none
cpu: yes
"""

import torch
import torch.nn as nn


HONEST_CALLS = 12


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0
        self.last = {}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        key = tuple(x.shape)
        if self.calls > HONEST_CALLS and key in self.last:
            return self.last[key].clone()
        out = x / x.abs().sum(dim=-1, keepdim=True)
        self.last[key] = out
        return out
