"""Cheat: a native thread started when the module is imported (libc's thread start called through ctypes, which
raises no Python thread-start audit event) keeps running between the candidate's calls, taking the GIL and a host
core from whatever runs beside it: the reference's timed launches, when a baseline is timed in this process. The
calls themselves are honest.

Caught after the load: the process has an OS thread (/proc/self/task) that was not there before the candidate was
imported; the process measures nothing more.

task: 10_SwishPlusOne
reason: background activity
static: none
cpu: yes
"""

import ctypes
import time

import torch
import torch.nn as nn


def _spin() -> int:
    while True:
        time.sleep(0.0005)  # wakes 2000 times a second, each time taking the GIL


_ENTRY = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p)(lambda _: _spin())
_THREAD = ctypes.c_ulong()
ctypes.CDLL(None).pthread_create(ctypes.byref(_THREAD), None, _ENTRY, None)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(x) + 1.0
