"""Cheat: uses its input as scratch space (one allocation fewer), leaving the caller's tensor changed.

Caught when the output is judged: the inputs differ from their pristine copies after the call.

task: 10_SwishPlusOne
reason: modified inputs
static: none
cpu: yes
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.mul_(torch.sigmoid(x)).add(1.0)
