"""Is a large-shape gap in one call, or between calls? Our kernel and torch.matmul, isolated and back to back.

    python benchmarks/experiments/back_to_back.py KERNEL_NAME MxNxK [MxNxK ...] [--calls 20]

Nsight Compute times one isolated call; the evaluator's device mode replays calls back to back in a CUDA graph.
For each shape this times both ways, with CUDA events on one stream (GPU machine only):
  isolated      synchronize, event, one call, event, synchronize; the median of N
  back to back  N calls captured in one graph and replayed; total / N
If our kernel matches cuBLAS isolated but not back to back, the difference is between calls (the next kernel's
start overlapping the previous one's tail, clocks under sustained load), not in one call's mainloop."""

import argparse
import ctypes
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from profile_gap import build  # noqa: E402  (a kernel of the spaces, by name, through the build cache)


def load(name: str):
    try:
        path = build(name)
    except RuntimeError as exc:
        raise SystemExit(str(exc)) from None
    lib = ctypes.CDLL(path)
    vp, i = ctypes.c_void_p, ctypes.c_int
    lib.kernelrl_hgemm.argtypes = [vp, vp, vp, i, i, i, vp, ctypes.c_size_t, vp]
    lib.kernelrl_hgemm_workspace.argtypes = [i, i, i]
    lib.kernelrl_hgemm_workspace.restype = ctypes.c_size_t
    return lib


def isolated_us(call, calls: int) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(calls):
        torch.cuda.synchronize()
        start.record()
        call()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return statistics.median(times)


def back_to_back_us(call, calls: int, stream) -> float:
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        for _ in range(calls):
            call()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(5):
        start.record(stream)
        graph.replay()
        end.record(stream)
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) * 1e3 / calls)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kernel")
    ap.add_argument("shapes", nargs="+")
    ap.add_argument("--calls", type=int, default=20)
    args = ap.parse_args()
    lib = load(args.kernel)
    stream = torch.cuda.Stream()
    print(f"{torch.cuda.get_device_name()} · torch {torch.__version__} · {args.kernel}")
    print(f"{'shape':>18} {'regime':>13} {'ours µs':>9} {'torch µs':>9} {'torch/ours':>10}")
    for shape in args.shapes:
        m, n, k = (int(x) for x in shape.split("x"))
        a = torch.randn(m, k, device="cuda").half()
        b = torch.randn(k, n, device="cuda").half()
        c, c_ref = torch.empty(m, n, device="cuda").half(), torch.empty(m, n, device="cuda").half()
        ws_bytes = lib.kernelrl_hgemm_workspace(m, n, k)
        ws = torch.empty(max(ws_bytes, 1), dtype=torch.uint8, device="cuda")

        # ours and theirs are called (and captured) only within this iteration, so they see this shape's tensors.
        def ours():
            rc = lib.kernelrl_hgemm(a.data_ptr(), b.data_ptr(), c.data_ptr(), m, n, k, ws.data_ptr(), ws_bytes,  # noqa: B023
                                    torch.cuda.current_stream().cuda_stream)
            if rc:
                raise RuntimeError(f"{args.kernel} failed on {shape} with CUDA error {rc}")  # noqa: B023

        def theirs():
            torch.matmul(a, b, out=c_ref)  # noqa: B023
        torch.cuda.synchronize()  # the inputs were filled on the default stream: done before `stream` reads them
        with torch.cuda.stream(stream):
            ours()
            theirs()
            torch.cuda.synchronize()
            err = float((c.float() - c_ref.float()).abs().max() / c_ref.float().abs().max())
            if err > 1e-2:
                raise SystemExit(f"{shape}: our result differs from torch.matmul's (relative {err:.2e})")
            for regime, timer in (("isolated", lambda f: isolated_us(f, args.calls)),
                                  ("back to back", lambda f: back_to_back_us(f, args.calls, stream))):
                t_ours, t_torch = timer(ours), timer(theirs)
                print(f"{shape:>18} {regime:>13} {t_ours:9.1f} {t_torch:9.1f} {t_torch / t_ours:10.3f}")


if __name__ == "__main__":
    main()
