"""Whether torch.compile works in a process confined as the KernelBench worker is (diagnostic, one line per try).

TorchInductor compiles in a pool of subprocesses and max-autotune benchmarks its choices in them; a process started
under the worker's Landlock domain cannot write its own /proc/PID/task entries, and CUDA then fails to start in it
(kernelrl/harness/sandbox.py, own_threads_proc). Each try runs in a fresh confined process, with the environment it
names: the default, and TORCHINDUCTOR_COMPILE_THREADS=1 (compile in the process itself)."""

import subprocess
import sys

TRY = r"""
import tempfile, traceback
from kernelrl.harness.sandbox import confine_worker
c, _ = confine_worker(tempfile.mkdtemp())
import torch
import torch._inductor.config as cfg
print("confined", c.active, "compile_threads", cfg.compile_threads, flush=True)
lin = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.ReLU()).cuda()
for mode in ("max-autotune", None):
    torch._dynamo.reset()
    f = torch.compile(lin, mode=mode)
    try:
        for batch in (256, 33, 65):
            f(torch.randn(batch, 512, device="cuda"))
        torch.cuda.synchronize()
        print("MODE", mode, "ok", flush=True)
    except Exception as exc:
        text = "".join(traceback.format_exception_only(type(exc), exc)).strip().splitlines()
        print("MODE", mode, "FAILED", " | ".join(t.strip() for t in text if t.strip())[-900:], flush=True)
"""

for env in ({}, {"TORCHINDUCTOR_COMPILE_THREADS": "1"}):
    import os
    r = subprocess.run([sys.executable, "-c", TRY], capture_output=True, text=True, env={**os.environ, **env},
                       timeout=240)
    print("ENV", env or "default", "rc", r.returncode)
    print(r.stdout.strip())
    if r.returncode:
        print(r.stderr.strip()[-600:])
