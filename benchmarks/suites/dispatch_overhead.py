"""Host overhead of the tuned library's dispatch (issue target: at most 2 µs per call), on a GPU machine.

    python benchmarks/suites/dispatch_overhead.py LIB [--shape 64x64x64] [--calls 20000] [--linear [--dtype bf16]]

Times, on the host clock and without synchronizing inside the loop, N calls of: the kernel through ctypes directly,
kernelrl.hgemm (C++ fast path, kernelrl/library/fastpath.cpp, when it built), kernelrl.hgemm on the Python path,
torch.ops.kernelrl.hgemm and torch.matmul. kernelrl.hgemm less the ctypes call is the dispatch overhead (an upper
bound: ctypes' own argument conversion is part of the first row, not of the C++ path). (The GPU work queues behind;
a tiny shape keeps the launch queue from filling for long.)"""

import argparse
import time

import torch

import kernelrl


def per_call_us(fn, calls):
    for _ in range(200):
        fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    elapsed = time.perf_counter() - start
    torch.cuda.synchronize()
    return elapsed / calls * 1e6


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("library")
    parser.add_argument("--shape", default="64x64x64")
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--dtype", default="fp16", choices=["fp16", "bf16"], help="with --linear")
    parser.add_argument("--linear", action="store_true",
                        help="nn.Linear's call instead: kernelrl.linear(x, W) with W N x K, beside F.linear")
    args = parser.parse_args()
    m, n, k = (int(x) for x in args.shape.split("x"))
    lib = kernelrl.load_library(args.library)
    if args.linear:
        return linear_rows(lib, m, n, k, args.calls, args.dtype)
    a, b = torch.randn(m, k, device="cuda").half(), torch.randn(k, n, device="cuda").half()
    out = torch.empty(m, n, device="cuda").half()
    name = lib.choose(m, n, k)
    rows = []
    if name:
        kern = lib.kernel(name)
        stream = torch.cuda.current_stream().cuda_stream
        args_ = (a.data_ptr(), b.data_ptr(), out.data_ptr(), m, n, k, None, 0, stream)
        rows.append(("ctypes kernel call", per_call_us(lambda: kern.fn(*args_), args.calls)))
    rows.append(("kernelrl.hgemm(out=)", per_call_us(lambda: kernelrl.hgemm(a, b, out), args.calls)))
    plans, lib._plans = lib._plans, None
    if plans is not None:  # the same calls with the C++ table set aside
        rows.append(("  ... on the Python path", per_call_us(lambda: kernelrl.hgemm(a, b, out), args.calls)))
    lib._plans = plans
    rows.append(("kernelrl.hgemm() allocating", per_call_us(lambda: kernelrl.hgemm(a, b), args.calls)))
    rows.append(("torch.ops.kernelrl.hgemm", per_call_us(lambda: torch.ops.kernelrl.hgemm(a, b), args.calls)))
    rows.append(("torch.matmul(out=)", per_call_us(lambda: torch.matmul(a, b, out=out), args.calls)))
    from kernelrl.library import native
    fast = "C++ fast path" if plans is not None else f"no C++ fast path ({native.failure() or 'disabled'})"
    print(f"{torch.cuda.get_device_name()} · torch {torch.__version__} · {args.shape} · kernel {name} · {fast}")
    for label, us in rows:
        print(f"{label:28s} {us:7.2f} µs/call (host)")


def linear_rows(lib, m, n, k, calls, dtype="fp16"):
    """The same for nn.Linear's layout: the kernel the library picks for (M, N, K) (an nk kernel) called raw,
    kernelrl.linear (C++ fast path, then the Python path), a patched nn.Linear under no_grad, the custom op and
    F.linear, on `dtype` tensors."""
    from kernelrl.library.runtime import _raw_stream
    torch_dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[dtype]
    x, w = (torch.randn(m, k, device="cuda", dtype=torch_dtype), torch.randn(n, k, device="cuda", dtype=torch_dtype))
    out = torch.empty(m, n, device="cuda", dtype=torch_dtype)
    name = lib.choose(m, n, k, "fp32", dtype, "nt")
    rows = []
    if name:
        kern = lib.kernel(name)
        ws = lib._workspace(x.device, kern.workspace(m, n, k))
        args_ = (x.data_ptr(), w.data_ptr(), out.data_ptr(), m, n, k, ws.data_ptr() if ws is not None else None,
                 ws.numel() if ws is not None else 0, _raw_stream(x.get_device()))
        rows.append(("ctypes kernel call", per_call_us(lambda: kern.fn(*args_), calls)))
    rows.append(("kernelrl.linear", per_call_us(lambda: kernelrl.linear(x, w), calls)))
    plans, lib._plans = lib._plans, None
    if plans is not None:  # the same calls with the C++ table set aside
        rows.append(("  ... on the Python path", per_call_us(lambda: kernelrl.linear(x, w), calls)))
    lib._plans = plans
    module = torch.nn.Linear(k, n, bias=False, device="cuda", dtype=torch_dtype)
    module.weight.data.copy_(w)
    kernelrl.patch(module, lib)
    with torch.no_grad():
        rows.append(("patched nn.Linear, no_grad", per_call_us(lambda: module(x), calls)))
    rows.append(("torch.ops.kernelrl.linear", per_call_us(lambda: torch.ops.kernelrl.linear(x, w), calls)))
    rows.append(("F.linear", per_call_us(lambda: torch.nn.functional.linear(x, w), calls)))
    from kernelrl.library import native
    fast = "C++ fast path" if plans is not None else f"no C++ fast path ({native.failure() or 'disabled'})"
    print(f"{torch.cuda.get_device_name()} · torch {torch.__version__} · {m}x{n}x{k} nt {dtype} · kernel {name} · "
          f"{fast}")
    for label, us in rows:
        print(f"{label:28s} {us:7.2f} µs/call (host)")


if __name__ == "__main__":
    main()
