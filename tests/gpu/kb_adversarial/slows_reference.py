"""Cheat: at import, wraps torch.softmax (what the reference calls) so that it computes the softmax three times;
the candidate calls the saved original. The baseline, timed in the same process, gets slower, and the candidate
looks faster without being faster.

Caught right after the import: torch's functions (torch.*, torch.nn.functional.*, torch.Tensor methods, the nn
modules' methods and globals) are captured with the harness's own before any candidate code runs, and compared
after every candidate call and around every baseline's timed calls. The static layer flags the assignment too.

task: 7_Softmax
reason: harness patch
static: harness-patch
cpu: yes
"""

import torch
import torch.nn as nn

_softmax = torch.softmax


def _slow_softmax(*args, **kwargs):
    _softmax(*args, **kwargs)
    _softmax(*args, **kwargs)
    return _softmax(*args, **kwargs)


torch.softmax = _slow_softmax


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _softmax(x, dim=-1)
