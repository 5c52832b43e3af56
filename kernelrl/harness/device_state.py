"""The process- and device-global state a candidate can change to gain speed or fool the checks, read before each
method runs and compared after: numerics flags (TF32, float32 matmul precision, reduced-precision reductions,
fp16 accumulation), the context's persisting-L2 set-aside, and the access-policy window of the stream the harness
passes in. A change is the changing method's verdict (`device state`, or the KernelBench worker's own keys), and
the harness puts the state back, so the next method starts where every method starts."""

from __future__ import annotations

import ctypes

CU_LIMIT_PERSISTING_L2_CACHE_SIZE = 6
CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW = 1
_ATTR_BYTES = 64  # sizeof(CUstreamAttrValue), a union; the window's num_bytes sits at offset 8


def _flag_probes(torch) -> dict:
    m = torch.backends.cuda.matmul
    return {
        "torch.backends.cuda.matmul.allow_tf32": (lambda: m.allow_tf32, lambda v: setattr(m, "allow_tf32", v)),
        "torch.backends.cudnn.allow_tf32": (lambda: torch.backends.cudnn.allow_tf32,
                                            lambda v: setattr(torch.backends.cudnn, "allow_tf32", v)),
        "torch.get_float32_matmul_precision()": (torch.get_float32_matmul_precision,
                                                 torch.set_float32_matmul_precision),
        "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction": (
            lambda: m.allow_fp16_reduced_precision_reduction,
            lambda v: setattr(m, "allow_fp16_reduced_precision_reduction", v)),
        "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction": (
            lambda: m.allow_bf16_reduced_precision_reduction,
            lambda v: setattr(m, "allow_bf16_reduced_precision_reduction", v)),
        "torch.backends.cuda.matmul.allow_fp16_accumulation": (
            lambda: m.allow_fp16_accumulation, lambda v: setattr(m, "allow_fp16_accumulation", v)),
        "torch.backends.cuda.matmul.fp32_precision": (lambda: m.fp32_precision,
                                                      lambda v: setattr(m, "fp32_precision", v)),
        "torch.backends.cudnn.fp32_precision": (lambda: torch.backends.cudnn.fp32_precision,
                                                lambda v: setattr(torch.backends.cudnn, "fp32_precision", v)),
        "torch.backends.fp32_precision": (lambda: torch.backends.fp32_precision,
                                          lambda v: setattr(torch.backends, "fp32_precision", v)),
        # the per-area precisions (bf16 or TF32 convolutions, matmuls, RNNs on oneDNN and cuDNN)
        **{f"torch.backends.{path}.fp32_precision": _attribute(torch.backends, f"{path}.fp32_precision")
           for path in ("mkldnn", "mkldnn.matmul", "mkldnn.conv", "mkldnn.rnn", "cudnn.conv", "cudnn.rnn")},
        "torch.backends.cuda.fp16_bf16_reduction_math_sdp_allowed()": (
            lambda: torch.backends.cuda.fp16_bf16_reduction_math_sdp_allowed(),
            lambda v: torch.backends.cuda.allow_fp16_bf16_reduction_math_sdp(v)),
    }


def _attribute(root, path: str) -> tuple:
    """(get, set) of the attribute at a dotted path below `root`."""
    *parents, name = path.split(".")

    def owner():
        obj = root
        for part in parents:
            obj = getattr(obj, part)
        return obj
    return (lambda: getattr(owner(), name), lambda v: setattr(owner(), name, v))


def _switch_probes(torch) -> dict:
    """The switches that pick which of torch's own kernels run and how (not their precision): turned off, pointed
    at another library or given fewer CPU threads, they make the reference and the baselines slower or faster, for
    every pair after too (a candidate that ran its own calls on every thread and left one to the rest read
    above its honest twin on the CPU: tests/kernelbench/test_switches_cpu.py)."""
    cuda, sdp = torch.backends.cuda, ("flash", "mem_efficient", "math", "cudnn")
    return {
        **{f"torch.backends.{path}": _attribute(torch.backends, path)
           for path in ("cudnn.enabled", "cudnn.benchmark", "cudnn.benchmark_limit", "cudnn.deterministic",
                        "mkldnn.enabled", "mkldnn.deterministic", "opt_einsum.enabled", "opt_einsum.strategy")},
        **{f"torch.backends.cuda.{k}_sdp_enabled()": (getattr(cuda, f"{k}_sdp_enabled"),
                                                      getattr(cuda, f"enable_{k}_sdp")) for k in sdp},
        "torch.backends.cuda.preferred_blas_library()": (cuda.preferred_blas_library, cuda.preferred_blas_library),
        "torch.backends.cuda.preferred_linalg_library()": (cuda.preferred_linalg_library,
                                                           cuda.preferred_linalg_library),
        "torch.backends.mha.get_fastpath_enabled()": (torch.backends.mha.get_fastpath_enabled,
                                                      torch.backends.mha.set_fastpath_enabled),
        "torch.get_num_threads()": (torch.get_num_threads, torch.set_num_threads),
        "torch.are_deterministic_algorithms_enabled()": (
            lambda: (torch.are_deterministic_algorithms_enabled(),
                     torch.is_deterministic_algorithms_warn_only_enabled()),
            lambda v: torch.use_deterministic_algorithms(v[0], warn_only=v[1])),
    }


def _read(probes: dict) -> dict:
    state = {}
    for name, (get, _set) in probes.items():
        try:
            state[name] = get()
        except Exception:  # a setting this torch does not have
            pass
    return state


def _put_back(probes: dict, before: dict, now: dict) -> None:
    """Each setting as in `before`. Setting one may move another (a legacy TF32 switch writes the per-area
    precisions), so this reads again and goes round until nothing differs (three rounds at most)."""
    for _ in range(3):
        moved = [name for name in probes if name in before and now.get(name) != before[name]]
        if not moved:
            return
        for name in moved:
            try:
                probes[name][1](before[name])
            except Exception:
                pass
        now = _read(probes)




class DeviceState:
    """Snapshots of the state above; `stream` is the raw handle (int) of the stream methods are given, or None."""

    def __init__(self, torch, cuda: bool, stream: int | None = None):
        self.torch, self.cuda, self.stream = torch, cuda, stream
        self.probes = _flag_probes(torch)
        self.switch_probes = _switch_probes(torch)
        self.libcuda = None
        if cuda:
            try:
                self.libcuda = ctypes.CDLL("libcuda.so.1")
            except OSError:
                self.libcuda = None

    # -- reading -----------------------------------------------------------------------------------------------
    def flags(self) -> dict:
        """The numerics flags alone (those this torch has)."""
        return _read(self.probes)

    def switches(self) -> dict:
        """The kernel-choice switches (those this torch has): not a verdict, put back (`restore_switches`)."""
        return _read(self.switch_probes)

    def restore_switches(self, before: dict) -> None:
        _put_back(self.switch_probes, before, self.switches())

    def snapshot(self) -> dict:
        state = self.flags()
        l2 = self.persisting_l2()
        if l2 is not None:
            state["persisting L2 set-aside (bytes)"] = l2
        window = self.stream_window()
        if window is not None:
            state["stream access-policy window (bytes)"] = window
        return state

    def persisting_l2(self) -> int | None:
        if self.libcuda is None:
            return None
        value = ctypes.c_size_t(0)
        try:
            rc = self.libcuda.cuCtxGetLimit(ctypes.byref(value), ctypes.c_int(CU_LIMIT_PERSISTING_L2_CACHE_SIZE))
        except AttributeError:
            return None
        return int(value.value) if rc == 0 else None

    def stream_window(self) -> int | None:
        if self.libcuda is None or not self.stream:
            return None
        buf = ctypes.create_string_buffer(_ATTR_BYTES)
        try:
            rc = self.libcuda.cuStreamGetAttribute(ctypes.c_void_p(self.stream),
                                                   ctypes.c_int(CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW), buf)
        except AttributeError:
            return None
        return int.from_bytes(buf.raw[8:16], "little") if rc == 0 else None

    @staticmethod
    def changed(before: dict, now: dict) -> list[str]:
        """One "name = now (was before)" per entry that differs."""
        return [f"{k} = {now.get(k)!r} (was {v!r})" for k, v in before.items() if now.get(k) != v]

    # -- putting back ------------------------------------------------------------------------------------------
    def restore(self, before: dict) -> None:
        now = self.snapshot()
        _put_back(self.probes, before, now)
        if self.libcuda is None:
            return
        key = "persisting L2 set-aside (bytes)"
        if key in before and now.get(key) != before[key]:
            self.libcuda.cuCtxSetLimit(ctypes.c_int(CU_LIMIT_PERSISTING_L2_CACHE_SIZE), ctypes.c_size_t(before[key]))
            self.libcuda.cuCtxResetPersistingL2Cache()
        key = "stream access-policy window (bytes)"
        if key in before and now.get(key) != before[key]:
            zero = ctypes.create_string_buffer(_ATTR_BYTES)  # no window: every access is a normal one
            self.libcuda.cuStreamSetAttribute(ctypes.c_void_p(self.stream),
                                              ctypes.c_int(CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW), zero)


def context_usable(torch, device="cuda", sync=None) -> bool:
    """The context probe of every worker, after a method raised: a sticky CUDA error (illegal address, launch
    failure) leaves the context unusable, and then the process must end (its method's verdict is `crash`).
    `sync`: the synchronize to use (the KernelBench worker's own copy, captured before any candidate code ran)."""
    try:
        (sync or torch.cuda.synchronize)()
        torch.zeros(1, device=device).add_(1).item()
        return True
    except Exception:
        return False
