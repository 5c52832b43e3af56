"""Cheat: returns one constant, 1 / columns, the mean of any softmax row: a value fixed without
this input that atol = rtol accepts on a wide softmax under both profiles. Caught by the scale-aware error.

task: 14_WideSoftmax
reason: wrong values
static: none
cpu: yes
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.full_like(x, 1.0 / x.shape[-1])
