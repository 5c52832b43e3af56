"""The program ncu profiles: one call of a built HGEMM candidate inside a profiler range.

    python -m kernelrl.evolve.ncu_driver LIB.so M N K
    python -m kernelrl.evolve.ncu_driver torch M N K     # torch.matmul (cuBLAS), for comparison

Warm-up calls (module loading, first-launch costs) run before cudaProfilerStart, so with
`--profile-from-start off` ncu sees exactly the kernels of one call. GPU machines only."""

from __future__ import annotations

import ctypes
import sys

import torch  # this module is only ever run as a program (`python -m`), on a GPU machine


def main(argv: list[str]) -> int:
    lib_path, m, n, k = argv[0], *map(int, argv[1:4])
    if lib_path == "torch":
        return _profile_torch(m, n, k)
    lib = ctypes.CDLL(lib_path)
    vp, i = ctypes.c_void_p, ctypes.c_int
    fn = lib.kernelrl_hgemm
    fn.argtypes, fn.restype = [vp, vp, vp, i, i, i, vp, ctypes.c_size_t, vp], i
    ws_bytes = 0
    if hasattr(lib, "kernelrl_hgemm_workspace"):
        lib.kernelrl_hgemm_workspace.argtypes, lib.kernelrl_hgemm_workspace.restype = [i, i, i], ctypes.c_size_t
        ws_bytes = int(lib.kernelrl_hgemm_workspace(m, n, k))
    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    b = torch.randn(k, n, device="cuda", dtype=torch.float16)
    c = torch.empty(m, n, device="cuda", dtype=torch.float16)
    ws = torch.empty(max(ws_bytes, 1), device="cuda", dtype=torch.uint8)
    stream = torch.cuda.current_stream().cuda_stream

    def call() -> int:
        return fn(a.data_ptr(), b.data_ptr(), c.data_ptr(), m, n, k, ws.data_ptr(), ws_bytes, stream)

    for _ in range(3):
        if call():
            print(f"kernelrl_hgemm returned an error on {m}x{n}x{k}", file=sys.stderr)
            return 1
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    rc = call()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    return 1 if rc else 0


def _profile_torch(m: int, n: int, k: int) -> int:
    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    b = torch.randn(k, n, device="cuda", dtype=torch.float16)
    c = torch.empty(m, n, device="cuda", dtype=torch.float16)
    for _ in range(3):
        torch.matmul(a, b, out=c)
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    torch.matmul(a, b, out=c)
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
