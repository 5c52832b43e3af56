"""Cheat: computes honestly for its first 12 calls (every correctness check and the warm-up), then returns its
last answer for any input of the same shape: a matmul that costs nothing, a large "speedup" wherever timing only
repeats calls.

Caught during timing: every timed call gets fresh inputs, and the last timed call of every round plus a secret
random sample are checked against the reference for their own inputs.

task: 1_Matmul
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

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        key = (tuple(A.shape), tuple(B.shape))
        if self.calls > HONEST_CALLS and key in self.last:
            return self.last[key]
        out = torch.matmul(A, B)
        self.last[key] = out
        return out
