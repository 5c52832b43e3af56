"""Cheat: each call returns an empty output at once and a new thread fills it in, after the timer has stopped
(a device-wide synchronize does not wait for a host thread).

Caught right after the first call: a thread was started from the candidate's code (Python 3.12+ audit event; before
that, a Python thread alive after the call that was not there before).

task: 10_SwishPlusOne
reason: thread
static: threads
cpu: yes
"""

import threading

import torch
import torch.nn as nn


def _fill(x: torch.Tensor, out: torch.Tensor) -> None:
    torch.mul(x, torch.sigmoid(x), out=out)
    out.add_(1.0)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        threading.Thread(target=_fill, args=(x, out), daemon=True).start()
        return out
