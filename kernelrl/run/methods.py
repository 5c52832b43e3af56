"""What the GPU worker can call: torch.matmul, the cuBLAS/cuBLASLt shim, and candidates' kernelrl_hgemm.

Every method binds to fixed buffers and a fixed stream ahead of time and returns a zero-argument callable that
launches one GEMM and returns a status (0 = ok), so all methods pay the same host overhead in the timed loop."""

from __future__ import annotations

import ctypes
import functools
import json
import time
from dataclasses import dataclass

import torch

from kernelrl.baselines import native_lib
from kernelrl.harness.timing import graph_time_s
from kernelrl.harness.verdicts import Rejected, Verdict
from kernelrl.workloads.hgemm import B_LAYOUTS

LT_WORKSPACE_BYTES = native_lib.LT_WORKSPACE_BYTES


class MethodError(Rejected):
    """A method cannot run this problem: its verdict key and detail."""


@dataclass
class Buffers:
    """One input set: A, B (K×N), Bt (N×K) and C tensors; `ws` is the method's own workspace tensor or None."""

    a: torch.Tensor
    b: torch.Tensor
    bt: torch.Tensor | None  # None where no method reads B transposed
    c: torch.Tensor


def _ptr(t: torch.Tensor | None) -> int | None:
    return t.data_ptr() if t is not None else None


class Method:
    name = "method"
    needs_bt = False

    def b_of(self, bufs: "Buffers") -> torch.Tensor:
        """The copy of B this method reads: B (K x N), or Bt (N x K) for methods that take it transposed."""
        if self.needs_bt:
            assert bufs.bt is not None  # made wherever a method reads it (reads_bt)
            return bufs.bt
        return bufs.b

    def workspace_bytes(self, m: int, n: int, k: int) -> int:
        return 0

    def prepare(self, problem, stream: torch.cuda.Stream, bufs: Buffers, ws: torch.Tensor | None) -> dict:
        """One-time, untimed setup per problem (plans, algorithm searches). Returns facts worth recording."""
        return {}

    def bind(self, problem, bufs: Buffers, ws: torch.Tensor | None, stream: torch.cuda.Stream):
        raise NotImplementedError

    def close(self) -> None:
        pass


class TorchMatmul(Method):
    """torch.matmul(A, B) for nn problems; for nt ones F.linear's product, A @ W^T with W the N x K copy (mm with
    a transposed view: the cuBLAS call F.linear makes, with an out= tensor F.linear lacks)."""

    name = "torch"

    def bind(self, problem, bufs, ws, stream):
        a, b, c = bufs.a, bufs.b, bufs.c
        if problem.layout == "nt":
            w = bufs.bt

            def call_nt():
                torch.mm(a, w.t(), out=c)
                return 0
            return call_nt

        def call():
            torch.matmul(a, b, out=c)
            return 0
        return call


def reads_bt(method: Method, problem) -> bool:
    """Whether the method reads the N x K copy of B on this problem (the harness then makes and guards it)."""
    return method.needs_bt or (isinstance(method, (TorchMatmul, LibraryCall)) and problem.layout == "nt")


def layout_mismatch(method: Method, problem) -> str | None:
    """Why the method cannot serve an nt problem, whose caller holds only W = B^T (N x K); None when it can."""
    if problem.layout != "nt" or reads_bt(method, problem):
        return None
    if isinstance(method, Candidate):
        return 'it takes B as K x N; an nt problem holds W as N x K: export kernelrl_hgemm_b_layout returning "nk"'
    return f"{method.name} reads B as K x N; for nt problems compare with the *_tn baselines, which read W"


class Cublas(Method):
    def __init__(self, lib, ctx, layout: str):
        self.lib, self.ctx, self.layout = lib, ctx, layout
        self.name = f"cublas_{layout}"
        self.needs_bt = layout == "tn"

    def workspace_bytes(self, m, n, k):
        return LT_WORKSPACE_BYTES

    def bind(self, problem, bufs, ws, stream):
        b = self.b_of(bufs)
        return functools.partial(self.lib.kr_cublas_gemm, self.ctx, native_lib.LAYOUTS[self.layout],
                                 native_lib.code(problem), bufs.a.data_ptr(), b.data_ptr(), bufs.c.data_ptr(),
                                 problem.m, problem.n, problem.k, ws.data_ptr(), ws.numel(), stream.cuda_stream)


class CublasLt(Method):
    """cuBLASLt with the heuristic's top-1 algorithm, or (autotune) the fastest of up to `max_algos` candidates
    timed on this GPU; the autotune choice is cached by the parent in the database."""

    def __init__(self, lib, ctx, layout: str, autotune: bool, algo_cache: dict, max_algos: int = 100):
        self.lib, self.ctx, self.layout, self.autotune = lib, ctx, layout, autotune
        self.name = f"cublaslt_{'auto' if autotune else 'heur'}_{layout}"
        self.needs_bt = layout == "tn"
        self.algo_cache, self.max_algos = algo_cache, max_algos
        self.plan = None
        self.algo = None
        self.new_tuning: dict | None = None

    def workspace_bytes(self, m, n, k):
        return LT_WORKSPACE_BYTES

    def prepare(self, problem, stream, bufs, ws):
        self.close()
        self.plan = self.lib.kr_lt_plan_create(self.ctx, native_lib.LAYOUTS[self.layout], native_lib.code(problem),
                                               problem.m, problem.n, problem.k)
        if not self.plan:
            raise MethodError(Verdict.BASELINE_FAILED, f"cuBLASLt plan: {native_lib.last_error(self.lib)}")
        key = lt_cache_key(problem, self.layout, ws.numel())
        if self.autotune and key in self.algo_cache:
            self.algo = ctypes.create_string_buffer(bytes.fromhex(self.algo_cache[key]["algo"]), native_lib.ALGO_BYTES)
            return {"algo_index": self.algo_cache[key]["algo_index"], "tuning": "cached"}
        count = self.max_algos if self.autotune else 1
        algos = ctypes.create_string_buffer(native_lib.ALGO_BYTES * count)
        needed = (ctypes.c_size_t * count)()
        found = ctypes.c_int()
        if self.lib.kr_lt_heuristics(self.plan, ws.numel(), count, algos, needed, ctypes.byref(found)):
            raise MethodError(Verdict.BASELINE_FAILED, f"cuBLASLt heuristic: {native_lib.last_error(self.lib)}")
        if not self.autotune:
            self.algo = ctypes.create_string_buffer(algos.raw[:native_lib.ALGO_BYTES], native_lib.ALGO_BYTES)
            return {"heuristic_algos": found.value}
        started = time.perf_counter()
        b = self.b_of(bufs)
        # The native search runs each algorithm once: it drops those that fail their check or their run.
        first = (ctypes.c_float * found.value)()
        best = ctypes.c_int(-1)
        if self.lib.kr_lt_autotune(self.plan, algos, found.value, bufs.a.data_ptr(), b.data_ptr(), bufs.c.data_ptr(),
                                   ws.data_ptr(), ws.numel(), stream.cuda_stream, 1, first, ctypes.byref(best)):
            raise MethodError(Verdict.BASELINE_FAILED, f"cuBLASLt autotuning: {native_lib.last_error(self.lib)}")
        # The survivors are timed as device mode times everything (CUDA-graph replay), two interleaved passes,
        # best of both: back-to-back event timing of small shapes measures launch overhead, not the algorithm.
        valid = [i for i in range(found.value) if first[i] != float("inf")]
        blobs = {i: ctypes.create_string_buffer(algos.raw[i * native_lib.ALGO_BYTES:(i + 1) * native_lib.ALGO_BYTES],
                                                native_lib.ALGO_BYTES) for i in valid}
        calls = max(1, min(100, int(2e-4 // _estimate_s(problem))))
        times = {i: float("inf") for i in valid}
        for _ in range(2):
            for i in valid:
                call = functools.partial(self.lib.kr_lt_run, self.plan, blobs[i], bufs.a.data_ptr(), b.data_ptr(),
                                         bufs.c.data_ptr(), ws.data_ptr(), ws.numel(), stream.cuda_stream)
                times[i] = min(times[i], graph_time_s(call, stream, calls) * 1e3)
        best = ctypes.c_int(min(valid, key=times.__getitem__))
        if valid[0] == 0 and times[0] <= times[best.value] * 1.01:  # within noise of the heuristic's choice: keep it
            best = ctypes.c_int(0)
        times = [times.get(i, float("inf")) for i in range(found.value)]
        offset = best.value * native_lib.ALGO_BYTES
        self.algo = ctypes.create_string_buffer(algos.raw[offset:offset + native_lib.ALGO_BYTES], native_lib.ALGO_BYTES)
        finite = [t for t in times if t != float("inf")]
        self.new_tuning = {"key": key, "algo": self.algo.raw.hex(), "algo_index": best.value,
                           "time_ms": times[best.value], "candidates": found.value, "valid": len(finite),
                           "search_s": time.perf_counter() - started, "calls_per_graph": calls}
        return {"algo_index": best.value, "tuning": "searched", "candidates": found.value,
                "search_s": round(self.new_tuning["search_s"], 4)}

    def bind(self, problem, bufs, ws, stream):
        b = self.b_of(bufs)
        return functools.partial(self.lib.kr_lt_run, self.plan, self.algo, bufs.a.data_ptr(), b.data_ptr(),
                                 bufs.c.data_ptr(), ws.data_ptr(), ws.numel(), stream.cuda_stream)

    def close(self):
        if self.plan:
            self.lib.kr_lt_plan_destroy(self.plan)
            self.plan = None


def _estimate_s(problem) -> float:
    """A rough per-call time from the roofline, only to size graphs."""
    return max(problem.flops / 700e12, problem.min_bytes / 3e12, 2e-6)


LT_TUNING_VERSION = "graph2"  # bump when the search changes, so older choices are not reused


def lt_cache_key(problem, layout: str, ws_bytes: int) -> str:
    dtype = getattr(problem, "dtype", "fp16")
    return (f"{LT_TUNING_VERSION}:{problem.m}x{problem.n}x{problem.k}:{problem.acc}:{layout}:{ws_bytes}"
            + ("" if dtype == "fp16" else f":{dtype}"))


class Candidate(Method):
    """A shared library exporting kernelrl_hgemm (and optionally _workspace, _supports, _info)."""

    def __init__(self, name: str, lib_path: str):
        self.name = name
        try:
            self.lib = ctypes.CDLL(lib_path)
        except OSError as exc:
            raise MethodError(Verdict.LOAD_FAILED, str(exc)) from None
        try:
            self.fn = self.lib.kernelrl_hgemm
        except AttributeError:
            raise MethodError(Verdict.NO_ENTRY_POINT, 'the library does not export extern "C" kernelrl_hgemm') from None
        vp, i = ctypes.c_void_p, ctypes.c_int
        self.fn.argtypes = [vp, vp, vp, i, i, i, vp, ctypes.c_size_t, vp]
        self.fn.restype = i
        self._workspace = self._optional("kernelrl_hgemm_workspace", ctypes.c_size_t, [i, i, i])
        self._supports = self._optional("kernelrl_hgemm_supports", i, [i, i, i])
        self._info = self._optional("kernelrl_hgemm_info", ctypes.c_char_p, [])
        # Optional untimed input staging (the CUDA-L2 protocol: padded copies made outside the timed region).
        self._stage = self._optional("kernelrl_hgemm_stage", i, [vp, vp, i, i, i, vp, ctypes.c_size_t, vp])
        self.staged = False
        # Optional B layout: "kn" (K x N row-major, the default) or "nk" (B^T, N x K row-major: nn.Linear's weight).
        layout_fn = self._optional("kernelrl_hgemm_b_layout", ctypes.c_char_p, [])
        layout = (layout_fn() or b"kn").decode(errors="replace") if layout_fn else "kn"
        if layout not in B_LAYOUTS:
            raise MethodError(Verdict.CONTRACT, f"kernelrl_hgemm_b_layout returned {layout!r}: use \"kn\" or \"nk\"")
        self.b_layout, self.needs_bt = layout, layout == "nk"

    def stage(self, problem, bufs: "Buffers", ws, stream) -> int:
        """Run the candidate's untimed staging for the current inputs; 0 when it has none to run."""
        if not (self.staged and self._stage):
            return 0
        return self._stage(bufs.a.data_ptr(), self.b_of(bufs).data_ptr(), problem.m, problem.n, problem.k, _ptr(ws),
                           ws.numel() if ws is not None else 0, stream.cuda_stream)

    def _optional(self, symbol, restype, argtypes):
        fn = getattr(self.lib, symbol, None) if hasattr(self.lib, symbol) else None
        if fn is not None:
            fn.restype, fn.argtypes = restype, argtypes
        return fn

    def info(self) -> dict:
        if self._info is None:
            return {}
        raw = self._info()
        try:
            return json.loads(raw.decode()) if raw else {}
        except (ValueError, UnicodeDecodeError):
            raise MethodError(Verdict.CONTRACT, "kernelrl_hgemm_info does not return valid JSON") from None

    def supports(self, m, n, k) -> bool:
        return True if self._supports is None else bool(self._supports(m, n, k))

    def workspace_bytes(self, m, n, k):
        return int(self._workspace(m, n, k)) if self._workspace is not None else 0

    def bind(self, problem, bufs, ws, stream):
        return functools.partial(self.fn, bufs.a.data_ptr(), self.b_of(bufs).data_ptr(), bufs.c.data_ptr(), problem.m,
                                 problem.n, problem.k, _ptr(ws), ws.numel() if ws is not None else 0,
                                 stream.cuda_stream)


class LibraryCall(Method):
    """A tuned library called the way its users call it: `Library.hgemm(a, b, out)`, with its dispatch (the C++
    fast path where it built) inside the timed call. One Library per folder and worker process, kept across
    problems, as a user's process keeps the one it loaded."""

    _loaded: dict[str, object] = {}

    def __init__(self, name: str, root: str):
        # Here, not at the top: importing the library loads its runtime and registers torch.ops.kernelrl, only in
        # a worker that measures a library.
        from kernelrl.library import native, runtime
        self.name = name
        self.native = native
        if root not in self._loaded:
            try:
                self._loaded[root] = runtime.Library(root)
            except (runtime.LibraryError, ValueError) as exc:
                raise MethodError(Verdict.LOAD_FAILED, f"the tuned library: {exc}") from None
        self.lib = self._loaded[root]

    def prepare(self, problem, stream, bufs, ws):
        return {"fastpath": self.native.load() is not None}

    def bind(self, problem, bufs, ws, stream):
        a, b, c, acc, hgemm = bufs.a, bufs.b, bufs.c, problem.acc, self.lib.hgemm
        if problem.layout == "nt":  # nn.Linear's call: kernelrl.linear(x, W) with W the N x K copy
            w, linear = bufs.bt, self.lib.linear

            def call_linear():
                linear(a, w, out=c)
                return 0
            return call_linear

        def call():
            hgemm(a, b, c, acc)
            return 0
        return call
