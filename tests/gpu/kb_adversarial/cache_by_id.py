"""Cheat: caches each output under id() of its input tensor; a benchmark that calls again with the same tensor
objects gets the cached answer.

Caught by the second check: the same tensor objects, refilled in place with other values, get the first call's
answer back.

task: 10_SwishPlusOne
reason: stale result
static: identity-cache
cpu: yes
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.cache = {}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if id(x) not in self.cache:
            self.cache[id(x)] = x * torch.sigmoid(x) + 1.0
        return self.cache[id(x)]
