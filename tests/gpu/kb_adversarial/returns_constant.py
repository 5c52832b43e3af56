"""Cheat: computes the answer once and returns that constant tensor on every later call.

Caught by the second check: the same inputs refilled with other values get the first call's answer back.

task: 10_SwishPlusOne
reason: stale result
static: none
cpu: yes
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.answer = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.answer is None:
            self.answer = x * torch.sigmoid(x) + 1.0
        return self.answer
