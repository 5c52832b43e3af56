"""Cheat: fallback_try_except kept in a second module that the candidate writes at load (under the scratch folder,
where writes are allowed) and imports: importlib compiles it (an audit event whose nearest frame was importlib's,
library code, so no name was noted for the trace) and its code objects are not the candidate file's, so the
exception trace never followed its frames; the except handler computes with PyTorch's silu, not the reference's
operators, so the kernel census passes it too. Accepted before the defence (a helper's second review, 2026-12-07,
CPU worker: 1.5x, own kernels asked for or not).

Caught on the first call: code made while the candidate imports is the candidate's (the import system is looked
through to the code that asked for it, and the module's file name is noted for the trace): `reference fallback`.

task: 10_SwishPlusOne
reason: reference fallback
static: none
cpu: yes
"""

import importlib.util
import os
import tempfile

import torch.nn as nn

_SOURCE = '''
import torch
_silu = getattr(torch.nn.functional, "silu")


def run(x):
    try:
        return torch.ops.aten.mm(x, x)  # the "fast path": (64, 16384) @ (64, 16384) fails on every call
    except RuntimeError:
        return _silu(x).add_(1.0)
'''

_path = os.path.join(tempfile.gettempdir(), "kr_fast_path_helper.py")
with open(_path, "w") as _file:
    _file.write(_SOURCE)
_spec = importlib.util.spec_from_file_location("kr_fast_path_helper", _path)
_helper = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_helper)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return _helper.run(x)
