"""kernelrl: make GPU kernels faster than the vendor libraries, measured honestly on your own GPU.

    lib = kernelrl.load_library("LIB")     # a folder written by `kernelrl tune --out LIB`
    c = kernelrl.hgemm(a, b)               # or torch.ops.kernelrl.hgemm(a, b)
    with kernelrl.record("shapes.json"):   # the GEMM shapes a model runs, with call counts
        model(x)
    y = kernelrl.linear(x, weight, bias)   # F.linear through the library (torch.ops.kernelrl.linear)
    kernelrl.patch(model, lib)             # every nn.Linear through it; kernelrl.unpatch(model) undoes it

The runtime (and torch) is imported on first use, so the CLI starts without torch; after that, kernelrl.hgemm is
the runtime's function itself (no wrapper on the hot path)."""

from kernelrl.version import __version__  # noqa: F401  (kernelrl.__version__)

_RUNTIME_NAMES = ("load_library", "hgemm", "Library", "LibraryError")


def __getattr__(name):
    if name == "record":  # `with kernelrl.record("shapes.json"):` (imports torch on first use)
        from kernelrl.workloads.record import record
        globals()[name] = record
        return record
    if name == "linear":
        from kernelrl.library.linear import linear
        globals()[name] = linear
        return linear
    if name in ("patch", "unpatch"):
        from kernelrl.library import patch as module
        value = getattr(module, name)
        globals()[name] = value
        return value
    if name in _RUNTIME_NAMES:
        from kernelrl.library import runtime
        value = getattr(runtime, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'kernelrl' has no attribute {name!r}")
