"""Cheat: computes an fp32 task in half precision (half the memory traffic, faster math) and converts back.

Caught by the first check: fp16 rounding (about 5e-4 relative) is far beyond the fp32 tolerance (1e-4).

task: 10_SwishPlusOne
reason: wrong values
static: precision
cpu: yes
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.half()
        return (h * torch.sigmoid(h) + 1.0).float()
