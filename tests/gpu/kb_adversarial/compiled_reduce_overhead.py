"""Not a cheat by intent, a behaviour the caller cannot live with: forward compiled with
torch.compile(mode="reduce-overhead"), whose CUDA graphs replay into the same output memory, so the previous call's
output is overwritten (PyTorch makes it raise when touched: "overwritten by a subsequent run").

Caught by the second check, which keeps the first call's output and reads it after the next call: the verdict names
the behaviour (and says to clone the output), not a worker error.

task: 10_SwishPlusOne
reason: same tensor every call
static: none
cpu: no
"""

import torch
import torch.nn as nn


def _swish_plus_one(x: torch.Tensor) -> torch.Tensor:
    return x * torch.sigmoid(x) + 1.0


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.fn = torch.compile(_swish_plus_one, mode="reduce-overhead")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fn(x)
