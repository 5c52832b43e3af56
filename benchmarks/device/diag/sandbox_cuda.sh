#!/usr/bin/env bash
# Which write a Landlock-confined process needs for CUDA to start on this machine (diagnostic, one line per try):
# no /proc grant, the process's own threads (/proc/PID/task, the worker's rule), its whole /proc/PID, /proc; then
# the worker's own rule (confine_worker) with a CUDA-using child under its domain.
python3 - <<'PY'
import subprocess, sys
tries = ["", "{pid}/task", "{pid}", "/proc"]
for extra in tries:
    code = ("import os, tempfile; from pathlib import Path; from kernelrl.harness.sandbox import confine_writes; "
            f"ex=[p.format(pid=os.getpid()) if p.startswith('/') else '/proc/' + p.format(pid=os.getpid()) for p in {[extra] if extra else []!r}]; "
            "c=confine_writes(['/dev', tempfile.mkdtemp()]+ex); "
            "import torch; print(ex, c.active, torch.zeros(1, device='cuda').add(1).item())")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    print("TRY", repr(extra or "no /proc grant"), "rc", r.returncode, r.stdout.strip()[-120:],
          r.stderr.strip().splitlines()[-1][-110:] if r.returncode and r.stderr.strip() else "")
code = ("import subprocess, sys, tempfile; from kernelrl.harness.sandbox import confine_worker; "
        "c, _ = confine_worker(tempfile.mkdtemp()); import torch; print('self', c.active, torch.zeros(1, device='cuda').add(1).item()); "
        "r = subprocess.run([sys.executable, '-c', 'import torch; print(torch.zeros(1, device=\"cuda\").item())'], capture_output=True, text=True); "
        "print('child under the domain rc', r.returncode, (r.stderr.strip().splitlines() or [''])[-1][-100:])")
r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
print("WORKER rc", r.returncode, r.stdout.strip(), r.stderr.strip()[-300:] if r.returncode else "")
PY
