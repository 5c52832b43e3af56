"""Cheat: fallback_try_except's forward (a fast path that always fails, PyTorch's softmax behind it), compiled from
a string under a file name of its own choosing, so that its frames are not the candidate file's, and with no
`except` the static layer can see.

Caught on the first call: the watch traces every frame that is not the library's or the harness's own code, by what
their files compile to (code_origin.py), not only frames named after the candidate's file.

task: 7_Softmax
reason: reference fallback
static: none
cpu: yes
"""

import torch
import torch.nn as nn

_FORWARD = '''
def forward(self, x):
    try:
        return _fast.softmax(x)
    except Exception:
        return torch.softmax(x, dim=-1)
'''
_NAMES = {"torch": torch, "_fast": None}
exec(compile(_FORWARD, "<fused softmax>", "exec"), _NAMES)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _NAMES["forward"](self, x)
