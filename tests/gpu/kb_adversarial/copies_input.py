"""Cheat: an identity kernel. It copies its input into a fresh output of the same shape and returns it: one
memory pass and no math, fast wherever a loose check or a near-identity task lets it pass. Unlike returns_input
the output has storage of its own, so the aliasing check has nothing to see.

Caught by the first check: the values are compared with the reference's at the fp32 tolerance (1e-4), and
x * sigmoid(x) + 1 is not x.

task: 10_SwishPlusOne
reason: wrong values
static: none
cpu: yes
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        out.copy_(x)
        return out
