"""What kernelrl's CUDA-L2 adapter itself costs per call, apart from any file's own work (GPU machine; torch's
headers and nvcc, no CUTLASS). Four builds of one empty kernel launch, timed alike:

  plain      a kernelrl candidate that launches the empty kernel on the stream it is given;
  adapter    a CUDA-L2-format file whose function launches it on the default stream, through the adapter: from_blob
             views, and the launch rewritten onto the caller's stream (the direct path). It never reads `b`, so it
             takes B as N x K: no transpose;
  adapter joined  the same file with a (never taken) call the rewrite cannot handle, so the adapter keeps the
             per-thread-stream guard and the fork/join events around the call;
  adapter+T  the same file reading `b` (kn): the adapter also writes b_col_major (B^T) every call, as every
             adapted file did before the nk mode.

For each shape: device mode (µs per call in a CUDA graph of 100 back-to-back calls, best of 3 replays) and host
mode (µs per call on the host clock around each call and a synchronize, as offline mode times). The adapter's
share is its row less `plain`.

    python benchmarks/suites/cuda_l2_wrapper_cost.py [--shapes 256x64x64,1024x1024x1024,4096x4096x4096] [--out FILE.md]
"""

from __future__ import annotations

import argparse
import ctypes
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402

from kernelrl.adapters import cuda_l2  # noqa: E402
from kernelrl.build.builder import BuildRequest, LocalBuilder  # noqa: E402
from kernelrl.environment import collect  # noqa: E402
from kernelrl.harness.timing import graph_time_s  # noqa: E402

EMPTY = "__global__ void kr_empty_kernel(void) {}\n"
PLAIN = EMPTY + r"""
#include <cuda_fp16.h>
#include <cuda_runtime.h>
extern "C" int kernelrl_hgemm(const __half* A, const __half* B, __half* C, int M, int N, int K, void* ws,
                              size_t ws_bytes, cudaStream_t stream) {
  kr_empty_kernel<<<1, 32, 0, stream>>>();
  return (int)cudaGetLastError();
}
"""
L2_FILE = EMPTY + r"""
#include <torch/extension.h>
void cuda_l2_h100_fp32(torch::Tensor a, torch::Tensor b, torch::Tensor b_col_major, torch::Tensor c) {
  if (c.size(0) < 0) { auto touch = @TOUCH@; (void)touch; }  // never taken: only says which tensors it reads
  kr_empty_kernel<<<1, 32>>>();
  @JOIN@
}
"""
# A call the wrapper's rewrite cannot put on the caller's stream (never made: c has rows), so it keeps the fork/join.
JOINED = "if (c.size(0) < 0) cudaStreamSynchronize(0);"


def build(tmp: Path, name: str, text: str, adapted: bool):
    builder = LocalBuilder()
    if adapted:
        path = tmp / f"{name}.cu"
        path.write_text(text)
        request = cuda_l2.build_request(path, name=name)
    else:
        request = BuildRequest(text, name=name)
    result = builder.build(request)
    if not result.ok:
        raise SystemExit(f"{name}: build failed: {result.error}")
    lib = ctypes.CDLL(result.lib_path)
    vp, i, sz = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t
    lib.kernelrl_hgemm.argtypes = [vp, vp, vp, i, i, i, vp, sz, vp]
    workspace = None
    if hasattr(lib, "kernelrl_hgemm_workspace"):
        lib.kernelrl_hgemm_workspace.argtypes = [i, i, i]
        lib.kernelrl_hgemm_workspace.restype = sz
        workspace = lib.kernelrl_hgemm_workspace
    return lib, workspace


def per_call_us(lib, workspace, m, n, k, stream) -> tuple[float, float]:
    a = torch.zeros(m, k, device="cuda", dtype=torch.half)
    b = torch.zeros(k * n, device="cuda", dtype=torch.half)  # as K x N or N x K: the same bytes
    c = torch.zeros(m, n, device="cuda", dtype=torch.half)
    ws_bytes = workspace(m, n, k) if workspace else 0
    ws = torch.zeros(max(ws_bytes, 1), device="cuda", dtype=torch.uint8)
    args = (a.data_ptr(), b.data_ptr(), c.data_ptr(), m, n, k, ws.data_ptr(), ws_bytes, stream.cuda_stream)

    def call():
        return lib.kernelrl_hgemm(*args)

    if call() != 0:
        raise SystemExit("the call failed")
    device_us = graph_time_s(call, stream, 100) * 1e6
    host = []
    for _ in range(200):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        call()
        torch.cuda.synchronize()
        host.append((time.perf_counter() - t0) * 1e6)
    return device_us, statistics.median(host[20:])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="256x64x64,1024x1024x1024,4096x4096x4096")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("needs an NVIDIA GPU")
        return 1
    shapes = [tuple(int(x) for x in s.split("x")) for s in args.shapes.split(",")]
    stream = torch.cuda.Stream()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        nk, kn = (L2_FILE.replace("@TOUCH@", f"{t}.data_ptr()") for t in ("b_col_major", "b"))
        methods = {"plain": build(tmp, "kr_plain_empty", PLAIN, False),
                   "adapter": build(tmp, "kr_l2_empty_nk", nk.replace("@JOIN@", ""), True),
                   "adapter joined": build(tmp, "kr_l2_empty_nk_joined", nk.replace("@JOIN@", JOINED), True),
                   "adapter+T": build(tmp, "kr_l2_empty_kn", kn.replace("@JOIN@", ""), True)}
        lines = [f"# The CUDA-L2 adapter's own cost per call\n\n"
                 f"- command: `python benchmarks/suites/cuda_l2_wrapper_cost.py "
                 f"--shapes {args.shapes}`\n- environment: {collect({'mode': 'device,host'})}\n",
                 "| shape | method | device µs/call (graph) | host µs/call (synchronized) |", "|---|---|---:|---:|"]
        for m, n, k in shapes:
            for name, (lib, workspace) in methods.items():
                dev, host = per_call_us(lib, workspace, m, n, k, stream)
                lines.append(f"| {m}x{n}x{k} | {name} | {dev:.2f} | {host:.2f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
