"""Cheat: copies the task's reference Model and derives ModelNew from it, so the "optimised" forward is the
reference one super() call away.

Caught when the candidate is loaded: a class named Model among ModelNew's bases.

task: 7_Softmax
reason: inherits Model
static: inherits-model
cpu: yes
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


class ModelNew(Model):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(x)
