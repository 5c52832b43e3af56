"""Runtime dispatch of torch tensors to a tuned library.

    lib = kernelrl.load_library("LIB")      # also makes torch.ops.kernelrl.hgemm use it
    c = kernelrl.hgemm(a, b)                # or torch.ops.kernelrl.hgemm(a, b): eager, CUDA graphs, torch.compile

Dispatch rules (kernelrl/library/policy.py: `route`), in order: the shape's own tuned kernel (when it beat the
fallbacks there); else, on a tuned shape whose faster fallback was cuBLASLt, cuBLASLt with the stored autotuned
algorithm (the library's copy of the kr_blas shim; operands 256-byte aligned); else the kernel that won the nearest
tuned shape and whose kernelrl_hgemm_supports accepts this one; else torch.matmul (cuBLAS). Inputs that
no kernel takes as they are (CPU tensors, misaligned pointers) go to torch.matmul too: never a wrong answer.
Non-contiguous inputs are made contiguous (a copy). Wrong dtypes, ranks, devices or mismatched shapes raise
LibraryError with one line saying what to pass."""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from typing import Any
from pathlib import Path

import torch

from kernelrl.baselines import native_lib
from kernelrl.library import native, policy
from kernelrl.library.export import LibraryError, built_library, read_manifest
from kernelrl.library.policy import FALLBACK_LABEL, LT_FALLBACKS, LT_LAYOUT


class _Kernel:
    def __init__(self, name: str, path: Path):
        self.name = name
        self.lib = ctypes.CDLL(str(path))
        vp, i = ctypes.c_void_p, ctypes.c_int
        self.fn = self.lib.kernelrl_hgemm
        self.fn.argtypes = [vp, vp, vp, i, i, i, vp, ctypes.c_size_t, vp]
        self.fn.restype = i
        self._ws = self._optional("kernelrl_hgemm_workspace", ctypes.c_size_t)
        self._supports = self._optional("kernelrl_hgemm_supports", i)
        # the fused epilogues (kernelrl/space/wgmma.cu.in: bias, SwiGLU), where the kernel has them
        self.ex = getattr(self.lib, "kernelrl_hgemm_ex", None)
        if self.ex is not None:
            self.ex.argtypes = [vp, vp, vp, vp, i, i, i, i, vp, ctypes.c_size_t, vp]
            self.ex.restype = i
        self._epilogue_supports = getattr(self.lib, "kernelrl_hgemm_epilogue_supports", None)
        if self._epilogue_supports is not None:
            self._epilogue_supports.argtypes, self._epilogue_supports.restype = [i] * 4, i
        layout = getattr(self.lib, "kernelrl_hgemm_b_layout", None)  # optional: "kn" unless the kernel says "nk"
        if layout is not None:
            layout.restype, layout.argtypes = ctypes.c_char_p, []
        self.b_layout = (layout() or b"kn").decode() if layout is not None else "kn"

    def _optional(self, symbol: str, restype):
        if not hasattr(self.lib, symbol):
            return None
        fn = getattr(self.lib, symbol)
        fn.argtypes, fn.restype = [ctypes.c_int] * 3, restype
        return fn

    def supports(self, m: int, n: int, k: int) -> bool:
        return True if self._supports is None else bool(self._supports(m, n, k))

    def fuses(self, m: int, n: int, k: int, flags: int) -> bool:
        """Whether kernelrl_hgemm_ex computes these epilogue flags (EPILOGUE_BIAS | EPILOGUE_SWIGLU) on this shape."""
        return self.ex is not None and self._epilogue_supports is not None and \
            bool(self._epilogue_supports(m, n, k, flags))

    def ex_entry(self) -> int:
        """kernelrl_hgemm_ex's address for the C++ fast path, or 0."""
        return 0 if self.ex is None else ctypes.cast(self.ex, ctypes.c_void_p).value or 0

    def native(self) -> tuple[int, int, int, int]:
        """(kind, entry point, plan, algorithm) for the C++ fast path."""
        entry = ctypes.cast(self.fn, ctypes.c_void_p).value
        assert entry is not None  # a loaded symbol's address
        return native.KERNEL, entry, 0, 0

    def workspace(self, m: int, n: int, k: int) -> int:
        return 0 if self._ws is None else int(self._ws(m, n, k))


class _LtFallback:
    """cuBLASLt through the library's copy of the kr_blas shim, with the algorithm the tuner's search chose per shape:
    the same call the evaluator's `cublaslt_auto_nn` baseline makes. `bind` gives a kernel-like object (fn,
    workspace, supports) so the dispatch code treats it like any tuned kernel."""

    def __init__(self, path: Path):
        self.native = native_lib
        self.lib = native_lib.load(str(path))
        self.ctx = self.lib.kr_blas_create()
        if not self.ctx:
            raise RuntimeError(f"cuBLAS context: {native_lib.last_error(self.lib)}")
        self.bound: dict[tuple, "_BoundLt"] = {}

    def bind(self, m: int, n: int, k: int, acc: str, algo_hex: str, layout: str = "nn",
             dtype: str = "fp16") -> "_BoundLt":
        """The plan of one shape in a layout (nt: x @ W^T, W read as N x K) and dtype, with its stored algorithm."""
        key = (m, n, k, acc, algo_hex, layout, dtype)
        if key not in self.bound:
            plan = self.lib.kr_lt_plan_create(self.ctx, self.native.LAYOUTS[LT_LAYOUT[layout]],
                                              self.native.CODES[(dtype, acc)], m, n, k)
            if not plan:
                raise RuntimeError(f"cuBLASLt plan for {m}x{n}x{k}: {self.native.last_error(self.lib)}")
            algo = ctypes.create_string_buffer(bytes.fromhex(algo_hex), self.native.ALGO_BYTES)
            self.bound[key] = _BoundLt(self.lib, plan, algo)
        return self.bound[key]


class _BoundLt:
    def __init__(self, lib, plan, algo):
        self.lib, self.plan, self.algo = lib, plan, algo  # the buffers stay alive as long as the binding

    def fn(self, a, b, c, m, n, k, ws, ws_bytes, stream) -> int:
        return self.lib.kr_lt_run(self.plan, self.algo, a, b, c, ws, ws_bytes, stream)

    def workspace(self, m: int, n: int, k: int) -> int:
        return native_lib.LT_WORKSPACE_BYTES

    def supports(self, m: int, n: int, k: int) -> bool:
        return True

    def native(self) -> tuple[int, int, int, int]:
        entry = ctypes.cast(self.lib.kr_lt_run, ctypes.c_void_p).value
        assert entry is not None  # a loaded symbol's address
        return native.LT, entry, int(self.plan), ctypes.addressof(self.algo)


class _TorchPlan:
    """The plan of a shape the library sends to torch.matmul: the C++ fast path calls torch's mm itself."""

    @staticmethod
    def native() -> tuple[int, int, int, int]:
        return native.TORCH, 0, 0, 0


class Library:
    def __init__(self, root: str | Path):
        self.root = Path(root)
        manifest = read_manifest(self.root)
        self.kernels_meta: dict[str, dict] = manifest.get("kernels", {})
        shim = manifest.get("native")
        self.native_path = self.root / shim if shim and (self.root / shim).is_file() else None
        # tuned key -> its dispatched kernel (None: the fallback); keys whose fallback is cuBLASLt -> its algorithm
        self.table, self.lt_algos = policy.tables(manifest, self.native_path is not None)
        self._lt: _LtFallback | None = None
        self._loaded: dict[str, _Kernel | None] = {}
        self._decisions: dict[tuple, policy.Route] = {}
        self._workspaces: dict[int, torch.Tensor] = {}
        self._retired: list[torch.Tensor] = []  # outgrown workspaces: a fast-path plan or a graph may point at them
        self._fast: dict[tuple, tuple] = {}
        # the C++ fast path's table (kernelrl/library/native.py), made on the first plan: an object of the extension
        # that native.py builds at run time, which has no static type
        self._plans: Any = None
        self._lock = threading.Lock()
        # (m, n, k, dtype, layout) -> [kernel calls, fallbacks]: stats()
        self._calls: dict[tuple[int, int, int, str, str], list[int]] = {}
        # (m, 2I, k, dtype) -> [fused calls, unfused ones]: kernelrl/library/fused.py's gate/up GEMMs
        self.fused_calls: dict[tuple[int, int, int, str], list[int]] = {}
        self._noted: set[tuple] = set()
        self._log = os.environ.get("KERNELRL_LOG", "") not in ("", "0")
        self.missing = self._say_what_is_missing(manifest)
        self.foreign = self._check_gpu(manifest)
        self.handle = len(_LIBRARIES)  # what torch.ops.kernelrl.linear names this library by
        _LIBRARIES.append(self)

    key = staticmethod(policy.key)  # a dispatch table key: (m, n, k, acc, dtype, layout)

    def _check_gpu(self, manifest: dict) -> str | None:
        """A library tuned on another GPU: its choices were measured there, so every shape runs torch.matmul (cuBLAS)
        here, and the user is told in one line. Returns the GPU it was tuned on, or None when it is this one."""
        env = manifest.get("env") or {}
        tuned_on = env.get("gpu")
        if not tuned_on or not torch.cuda.is_available():
            return None
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        here = {"gpu": props.name, "sm_count": props.multi_processor_count,
                "compute_capability": f"{props.major}.{props.minor}"}
        # Only what the manifest recorded is compared (libraries from before it recorded SMs and arch: the name).
        differs = [key for key, value in here.items() if env.get(key) is not None and str(env[key]) != str(value)]
        if not differs:
            return None
        what = ", ".join(f"{key} {env[key]} there, {here[key]} here" for key in differs)
        say(f"{self.root} was tuned on another GPU ({what}): every shape runs its fallback (torch.matmul, or "
             f"F.linear for kernelrl.linear). Tune it here (kernelrl tune --shapes ... --out DIR)")
        self.table = {key: None for key in self.table}
        self.lt_algos = {}
        return tuned_on

    def _say_what_is_missing(self, manifest: dict) -> list[str]:
        """A fallback is never silent: kernels the manifest dispatches to but lib/ lacks (a library copied or
        committed without its binaries), and cuBLASLt fallbacks without the shim, are said in one line."""
        wanted = sorted({name for name in self.table.values() if name is not None})
        missing = [name for name in wanted if self.library_path(name) is None]
        lt_lost = sum(1 for e in manifest.get("shapes", {}).values()
                      if (e.get("fallback") or {}).get("method") in LT_FALLBACKS.values() and self.native_path is None)
        if missing or lt_lost:
            parts = [f"{len(missing)} of {len(wanted)} kernels are not built in lib/"] if missing else []
            parts += [f"{lt_lost} cuBLASLt fallbacks have no lib/libkr_blas.so"] if lt_lost else []
            say(f"{self.root}: {'; '.join(parts)}: those shapes run their fallback (torch.matmul; F.linear for "
                 f"kernelrl.linear). Build them here with "
                 f"`kernelrl library build {self.root}`")
        return missing

    # -- choosing ------------------------------------------------------------------------------------------------
    def library_path(self, name: str) -> Path | None:
        """The compiled file of a shipped kernel, when the library has it."""
        return built_library(self.root, self.kernels_meta.get(name, {}))

    def kernel(self, name: str) -> _Kernel | None:
        if name not in self._loaded:
            path = self.library_path(name)
            self._loaded[name] = _Kernel(name, path) if path is not None else None
        return self._loaded[name]

    def route(self, m: int, n: int, k: int, acc: str = "fp32", dtype: str = "fp16",
              layout: str = "nn") -> policy.Route:
        """What serves a well-aligned CUDA call of (m, n, k) here, and why (`policy.route`; decisions are cached).
        A kernel is usable when it is built and takes B as this layout holds it; off the grid it must also support
        the shape."""
        key = self.key(m, n, k, acc, dtype, layout)
        decided = self._decisions.get(key)
        if decided is not None:
            return decided

        def supports(name: str) -> bool:
            kern = self.kernel(name)
            assert kern is not None  # policy.route asks only of a usable kernel
            return kern.supports(m, n, k)

        decided = self._decisions[key] = policy.route(key, self.table, self.lt_algos,
                                                      usable=lambda name: self.usable(name, layout), supports=supports)
        if self._log:
            say(f"{m}x{n}x{k} {dtype} {layout}: "
                 f"{decided.kernel or 'fallback (' + (decided.name or FALLBACK_LABEL[layout]) + ')'}")
        return decided

    def choose(self, m: int, n: int, k: int, acc: str = "fp32", dtype: str = "fp16", layout: str = "nn") -> str | None:
        """The kernel that runs (m, n, k), or None for a fallback (cuBLASLt, torch.matmul, F.linear): `route`."""
        return self.route(m, n, k, acc, dtype, layout).kernel

    def usable(self, name: str, layout: str = "nn") -> bool:
        """A built kernel that takes B the way this layout holds it (nt: the weight as N x K, an nk kernel)."""
        kern = self.kernel(name)
        return kern is not None and kern.b_layout == _B_LAYOUT[layout]

    def stats(self) -> dict[tuple, dict]:
        """Calls through linear() per (M, N, K, dtype, layout): the kernel that ran (or the cuBLASLt fallback's name),
        kernel calls and fallbacks (F.linear or cuBLASLt)."""
        counted = {shape: list(pair) for shape, pair in self._calls.items()}
        if self._plans is not None:  # the calls the C++ fast path served
            names = {index: name for name, index in _LINEAR_TABLE.items()}
            for table, m, n, k, _dev, kind, calls in self._plans.linear_counts():
                pair = counted.setdefault((m, n, k, names[table], "nt"), [0, 0])
                pair[0 if kind == native.KERNEL else 1] += calls
        return {shape: {"kernel": self._route(self.key(*shape[:3], "fp32", *shape[3:])),
                        "calls": calls, "fallbacks": fallbacks}
                for shape, (calls, fallbacks) in sorted(counted.items())}

    def count_fused(self, shape: tuple[int, int, int, str], fused: bool) -> None:
        """One gate/up call (kernelrl/library/fused.py) of (m, 2I, k, dtype), fused in the kernel or not."""
        self.fused_calls.setdefault(shape, [0, 0])[0 if fused else 1] += 1

    def note_once(self, key: tuple) -> bool:
        """True the first time `key` is noted: a fallback is said once, not per call."""
        with self._lock:
            if key in self._noted:
                return False
            self._noted.add(key)
            return True

    def _route(self, key: tuple) -> str | None:
        """What a decided shape runs: its kernel, the cuBLASLt fallback's name, or None (torch.matmul, F.linear)."""
        decided = self._decisions.get(key)
        if decided is None:  # not decided (a call on the CPU): what the manifest stored
            return LT_FALLBACKS[key[5]] if key in self.lt_algos else None
        return decided.name

    def runs(self, m: int, n: int, k: int, dtype: str = "fp16", layout: str = "nt") -> str:
        """What a well-aligned CUDA call of this shape (fp32 accumulation) runs here: a kernel's name, a cuBLASLt
        fallback's method name, or the plain fallback ("F.linear" for nt, "torch.matmul" for nn)."""
        return self.route(m, n, k, "fp32", dtype, layout).name or FALLBACK_LABEL[layout]

    # -- nn.Linear: y = x @ W^T (+ bias) -------------------------------------------------------------------------
    def linear(self, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None,
               out: torch.Tensor | None = None) -> torch.Tensor:
        """F.linear through the library: the tuned nt kernel of the call's (M, N, K, dtype) where there is one,
        else F.linear unchanged (counted in stats()). A non-contiguous weight also goes to F.linear (a copy per
        call would cost more than the kernel saves). `out` (2-D x, no bias, contiguous (M, N)): written in place,
        as the evaluator measures it."""
        if out is None and self._plans is not None:
            # C++ fast path: a shape already decided, checked and launched (or sent to F.linear) in one call
            y = self._plans.linear(x, weight, bias)
            if y is not None:
                return y
        return self._linear_checked(x, weight, bias, out)

    def _linear_checked(self, x, weight, bias, out):
        _check_linear(x, weight, bias)
        if out is not None and (bias is not None or x.dim() != 2 or not out.is_contiguous() or
                                tuple(out.shape) != (x.shape[0], weight.shape[0]) or out.dtype != x.dtype):
            raise LibraryError(f"out must be a contiguous {x.dtype} tensor of shape ({x.shape[0]}, {weight.shape[0]}) "
                               f"for a 2-D x without bias")
        n, k = weight.shape
        m = x.numel() // k if k else 0
        dtype = _DTYPE_NAMES.get(x.dtype)
        counts = self._calls.setdefault((m, n, k, dtype or str(x.dtype).removeprefix("torch."), "nt"), [0, 0])
        # What runs: policy.route's answer (the shape's tuned kernel, else cuBLASLt with its stored algorithm, else
        # F.linear), where the call is one a kernel can take
        kern, align, name = None, 0, None
        dev = x.get_device()
        if x.is_cuda and dtype is not None and m and weight.is_contiguous():
            decided = self.route(m, n, k, "fp32", dtype, "nt")
            name, align = decided.kernel, decided.align
            if decided.kind == policy.KERNEL:
                kern = self.kernel(name)
            elif decided.kind == policy.LT:
                algo = self.lt_algos[self.key(m, n, k, "fp32", dtype, "nt")]
                kern = self._lt_fallback().bind(m, n, k, "fp32", algo, "nt", dtype)
            else:  # F.linear is this shape's choice: later calls run it from C++
                self._register_linear(dtype, m, n, k, dev, None, None, 0, 0)
        x2 = x.reshape(m, k) if kern is not None else None
        if kern is None or (x2.data_ptr() | weight.data_ptr() | (out.data_ptr() if out is not None else 0)) & align:
            counts[1] += 1
            if kern is not None and self._log and counts[1] == 1:  # the decision said otherwise: say why, once
                say(f"{m}x{n}x{k} {dtype} nt: operands not {align + 1}-byte aligned: F.linear for such calls")
            if out is not None:
                return torch.mm(x, weight.t(), out=out)
            return torch.nn.functional.linear(x, weight, bias)
        if out is None:
            out = torch.empty((m, n), dtype=x.dtype, device=x.device)
        ws = self.workspace(x.device, kern.workspace(m, n, k))
        ws_ptr, ws_size = (ws.data_ptr(), ws.numel()) if ws is not None else (None, 0)
        # the bias in the kernel's epilogue where it has one (one rounding, no second pass over the output)
        fused = bias is not None and isinstance(kern, _Kernel) and kern.fuses(m, n, k, EPILOGUE_BIAS) and \
            bias.is_contiguous() and not bias.data_ptr() & 3
        with torch.cuda.device(dev):  # the launch goes to the current device: make it x's
            if fused:
                rc = kern.ex(x2.data_ptr(), weight.data_ptr(), out.data_ptr(), bias.data_ptr(), m, n, k,
                             EPILOGUE_BIAS, ws_ptr, ws_size, _raw_stream(dev))
            else:
                rc = kern.fn(x2.data_ptr(), weight.data_ptr(), out.data_ptr(), m, n, k, ws_ptr, ws_size,
                             _raw_stream(dev))
        if rc:
            raise RuntimeError(f"kernelrl {name or LT_FALLBACKS['nt']} failed on {m}x{n}x{k} with error {rc}")
        counts[0 if name is not None else 1] += 1  # cuBLASLt is a fallback, if a faster one than F.linear
        # the workspace only grows (see _hgemm_checked), so later calls of this shape can launch from C++
        self._register_linear(dtype, m, n, k, dev, kern, ws_ptr, ws_size, align)
        if bias is not None and not fused:
            out.add_(bias)
        return out.reshape(*x.shape[:-1], n)

    # -- calling -------------------------------------------------------------------------------------------------
    def hgemm(self, a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None = None, acc: str = "fp32"):
        # C++ fast path: a shape already decided (fp32 accumulation, the table's only kind), checked and launched
        # in one call; None for anything it does not know.
        if self._plans is not None and acc == "fp32":
            c = self._plans.run(a, b, out)
            if c is not None:
                return c
        # Python fast path: the same, where the C++ one is unavailable. Every condition the slow path checks
        # is checked here too, in one expression, so a call costs about a microsecond of Python on top of ctypes.
        if (a.dtype is _F16 and b.dtype is _F16 and a.is_cuda and a.dim() == 2 and b.dim() == 2
                and a.is_contiguous() and b.is_contiguous()):
            m, k = a.shape
            kb, n = b.shape
            dev = a.get_device()  # an int: cheaper than building torch.device objects to compare
            plan = self._fast.get((m, n, k, acc, dev))
            if plan is not None and kb == k and b.get_device() == dev:
                if out is None:
                    out = torch.empty((m, n), dtype=_F16, device=a.device)
                pa, pb, pc = a.data_ptr(), b.data_ptr(), out.data_ptr()
                fn, ws_ptr, ws_size, name, align = plan
                if (out.dtype is _F16 and out.get_device() == dev and out.shape == (m, n) and out.is_contiguous()
                        and not (pa | pb | pc) & align):
                    rc = fn(pa, pb, pc, m, n, k, ws_ptr, ws_size, _raw_stream(dev))
                    if rc:
                        raise RuntimeError(f"kernelrl kernel {name} failed on {m}x{n}x{k} with CUDA error {rc}")
                    return out
        return self._hgemm_checked(a, b, out, acc)

    def _hgemm_checked(self, a, b, out, acc):
        _check(a, b, out)
        m, k = a.shape
        n = b.shape[1]
        if out is None:
            out = torch.empty((m, n), dtype=torch.float16, device=a.device)
        decided = self.route(m, n, k, acc) if a.is_cuda else None
        a, b = a.contiguous(), b.contiguous()
        if decided is not None and decided.kind == policy.TORCH and acc == "fp32":
            # torch.matmul is this shape's choice (not a misaligned call's): later calls run mm from C++
            self._register_native(m, n, k, a.get_device(), _TorchPlan, None, 0, 0)
        if decided is None or decided.kind == policy.TORCH or \
                (a.data_ptr() | b.data_ptr() | out.data_ptr()) & decided.align:  # policy.ALIGN
            return torch.matmul(a, b, out=out)
        name = decided.name
        if decided.kind == policy.LT:
            kern = self._lt_fallback().bind(m, n, k, acc, self.lt_algos[self.key(m, n, k, acc)])
        else:
            kern = self.kernel(name)
        ws = self.workspace(a.device, kern.workspace(m, n, k))
        ws_ptr, ws_size = (ws.data_ptr(), ws.numel()) if ws is not None else (None, 0)
        rc = kern.fn(a.data_ptr(), b.data_ptr(), out.data_ptr(), m, n, k, ws_ptr, ws_size,
                     torch.cuda.current_stream(a.device).cuda_stream)
        if rc:
            raise RuntimeError(f"kernelrl kernel {name} failed on {m}x{n}x{k} with CUDA error {rc}")
        # The workspace of a device only grows (the old buffer stays alive while a captured graph may use it), so
        # the pointer stays valid for this shape: later calls skip the checks above.
        align = decided.align  # the pointer bits that must be zero on later fast calls
        self._fast[(m, n, k, acc, a.get_device())] = (kern.fn, ws_ptr, ws_size, name, align)
        if acc == "fp32":
            self._register_native(m, n, k, a.get_device(), kern, ws_ptr, ws_size, align)
        return out

    def _native_plans(self):
        """The C++ fast path's table of this library (made on the first plan), or None where it cannot load."""
        if self._plans is None:
            mod = native.load(say=say)
            if mod is None:
                return None
            with self._lock:
                if self._plans is None:
                    self._plans = mod.Plans()
        return self._plans

    def _register_native(self, m, n, k, dev, kern, ws_ptr, ws_size, align) -> None:
        if self._native_plans() is None:
            return
        kind, fn, plan, algo = kern.native()
        self._plans.add(m, n, k, dev, kind, fn, plan, algo, ws_ptr or 0, ws_size, align)

    def _register_linear(self, dtype, m, n, k, dev, kern, ws_ptr, ws_size, align) -> None:
        """A decided linear shape's plan for the C++ fast path: `kern` (an nk kernel, or cuBLASLt bound to its
        stored algorithm), or F.linear when None."""
        if self._native_plans() is None:
            return
        kind, fn, plan, algo = _TorchPlan.native() if kern is None else kern.native()
        ex = kern.ex_entry() if isinstance(kern, _Kernel) and kern.fuses(m, n, k, EPILOGUE_BIAS) else 0
        self._plans.add_linear(_LINEAR_TABLE[dtype], m, n, k, dev, kind, fn, plan, algo, ws_ptr or 0, ws_size, align,
                               ex)

    def _lt_fallback(self) -> "_LtFallback":
        assert self.native_path is not None  # a cuBLASLt route needs the shim (policy.tables)
        with self._lock:
            if self._lt is None:
                self._lt = _LtFallback(self.native_path)
        return self._lt

    def workspace(self, device: torch.device, size: int) -> torch.Tensor | None:
        if size == 0:
            return None
        index = device.index if device.index is not None else torch.cuda.current_device()
        with self._lock:
            ws = self._workspaces.get(index)
            if ws is None or ws.numel() < size:
                if ws is not None:
                    self._retired.append(ws)
                ws = torch.empty(size, dtype=torch.uint8, device=device)
                self._workspaces[index] = ws
        return ws


EPILOGUE_BIAS, EPILOGUE_SWIGLU = 1, 2  # kernelrl_hgemm_ex's flags (kernelrl/space/wgmma.cu.in: EPI_BIAS, EPI_SWIGLU)
_F16 = torch.float16
_DTYPE_NAMES = {torch.float16: "fp16", torch.bfloat16: "bf16"}
_LINEAR_TABLE = {"fp16": 0, "bf16": 1}  # the C++ fast path's linear tables (fastpath.cpp: linear_table)
_B_LAYOUT = {"nn": "kn", "nt": "nk"}  # the B a kernel must take for a layout (kernelrl_hgemm_b_layout)
_LIBRARIES: list["Library"] = []  # every Library made in this process, by handle


def say(line: str) -> None:
    """One line for the user on stderr (a fallback, a missing build): never a silent one."""
    print(f"kernelrl: {line}", file=sys.stderr)




_RAW_STREAM = getattr(torch._C, "_cuda_getCurrentRawStream", None)


def _raw_stream(index: int) -> int:
    """The current CUDA stream's handle, without building a torch.cuda.Stream object (a microsecond per call)."""
    if _RAW_STREAM is None:
        return torch.cuda.current_stream(index).cuda_stream
    return _RAW_STREAM(index)


def _check(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None) -> None:
    if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
        raise LibraryError("hgemm takes two torch tensors a (M×K) and b (K×N)")
    if a.dim() != 2 or b.dim() != 2:
        raise LibraryError(f"hgemm takes 2-D tensors; got a with {a.dim()} and b with {b.dim()} dimensions")
    if a.dtype != torch.float16 or b.dtype != torch.float16:
        raise LibraryError(f"hgemm takes float16 tensors; got {a.dtype} and {b.dtype} (convert with .half())")
    if a.device != b.device:
        raise LibraryError(f"a is on {a.device} and b on {b.device}: put both on the same device")
    if a.shape[1] != b.shape[0]:
        raise LibraryError(f"shape mismatch: a is {tuple(a.shape)}, b is {tuple(b.shape)}; a.shape[1] must equal "
                           "b.shape[0]")
    if out is not None:
        want = (a.shape[0], b.shape[1])
        if tuple(out.shape) != want or out.dtype != torch.float16 or out.device != a.device or \
                not out.is_contiguous():
            raise LibraryError(f"out must be a contiguous float16 tensor of shape {want} on {a.device}")


def _check_linear(x, weight, bias) -> None:
    if not isinstance(x, torch.Tensor) or not isinstance(weight, torch.Tensor):
        raise LibraryError("linear takes torch tensors x (..., K) and weight (N, K)")
    if x.dim() < 1 or weight.dim() != 2:
        raise LibraryError(f"linear takes x with at least 1 dimension and a 2-D weight; got x with {x.dim()} and "
                           f"weight with {weight.dim()} dimensions")
    if x.dtype != weight.dtype or (bias is not None and bias.dtype != x.dtype):
        raise LibraryError(f"x is {x.dtype}, weight {weight.dtype}" + (f", bias {bias.dtype}" if bias is not None
                           else "") + ": pass them in one dtype")
    if x.device != weight.device or (bias is not None and bias.device != x.device):
        raise LibraryError(f"x is on {x.device} and weight on {weight.device}: put them on the same device")
    if x.shape[-1] != weight.shape[1]:
        raise LibraryError(f"shape mismatch: x is {tuple(x.shape)}, weight {tuple(weight.shape)}; x.shape[-1] must "
                           f"equal weight.shape[1]")
    if bias is not None and tuple(bias.shape) != (weight.shape[0],):
        raise LibraryError(f"bias is {tuple(bias.shape)}; it must be ({weight.shape[0]},), one value per output")


_default: Library | None = None


def load_library(root: str | Path) -> Library:
    """Load a tuned library and make it the one kernelrl.hgemm and torch.ops.kernelrl.hgemm use. The C++ fast path
    is built here (once per machine, not in the middle of a first call) when a GPU will use it."""
    global _default
    _default = Library(root)
    if torch.cuda.is_available():
        native.load(say=say)
    return _default


def library_by_handle(handle: int) -> Library:
    """A Library by its handle; -1 is the one load_library made the default."""
    if handle == -1:
        if _default is None:
            raise LibraryError("no tuned library loaded: call kernelrl.load_library(LIB) first")
        return _default
    if not 0 <= handle < len(_LIBRARIES):
        raise LibraryError(f"no tuned library has handle {handle}: pass Library.handle of a loaded library, or -1")
    return _LIBRARIES[handle]


def hgemm(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """C = A @ B through the loaded tuned library (fp32 accumulation)."""
    if _default is None:
        raise LibraryError("no tuned library loaded: call kernelrl.load_library(LIB) first")
    return _default.hgemm(a, b, out)


@torch.library.custom_op("kernelrl::hgemm", mutates_args=())
def _hgemm_op(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return hgemm(a, b)


@_hgemm_op.register_fake
def _(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a.new_empty((a.shape[0], b.shape[1]))
