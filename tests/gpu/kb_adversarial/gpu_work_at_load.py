"""Cheat: construction starts GPU work on a side stream and returns without waiting for it: a kernel that keeps the
GPU busy for about a second after the load, beside whatever the harness runs next (a baseline timed then would be
slower). The calls themselves are honest.

Caught after the load: the worker waits for the device with its own clock, and a device still busy well past what
the reference's own load needed is `background activity`; the process measures nothing more.

task: 10_SwishPlusOne
reason: background activity
static: cuda-stream
cpu: no
"""

import torch
import torch.nn as nn

SPIN_CYCLES = 2_000_000_000  # about a second at the H200's ~2 GHz SM clock


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.side = torch.cuda.Stream()
        with torch.cuda.stream(self.side):
            torch.cuda._sleep(SPIN_CYCLES)  # a spinning kernel, still running when __init__ returns

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(x) + 1.0
