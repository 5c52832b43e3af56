"""Cheat: the work runs on a side stream created in Python (torch.cuda.Stream), and nothing orders it with the
caller's stream either way. An event timer on the caller's stream sees nothing of it, and a consumer on the
caller's stream may read the output before it is written.

Caught by the stream-order check: the inputs become ready on the caller's stream only behind a spin kernel, and the
output is copied on the caller's stream right after the call: the side stream read the inputs before they were
there.

task: 10_SwishPlusOne
reason: stream order
static: cuda-stream
cpu: no
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.side = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.side is None:
            self.side = torch.cuda.Stream()
        with torch.cuda.stream(self.side):
            return x * torch.sigmoid(x) + 1.0
