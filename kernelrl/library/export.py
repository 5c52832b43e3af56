"""Write a tuned library folder from the tuner's per-shape results."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import tempfile
from pathlib import Path

from kernelrl.baselines import native_lib
from kernelrl.build.builder import BuildRequest
from kernelrl.errors import UserError
from kernelrl.library import policy
from kernelrl.version import __version__

MANIFEST = "manifest.json"


class LibraryError(UserError, ValueError):
    """Bad input to the tuned library; the message says what to pass instead."""


def read_manifest(root: Path) -> dict:
    path = Path(root) / MANIFEST
    if not path.is_file():
        raise LibraryError(f"{root}: no {MANIFEST}; pass a folder written by `kernelrl tune --out`")
    try:
        return json.loads(path.read_text())
    except ValueError as exc:
        raise LibraryError(f"{path}: not a kernelrl manifest ({exc})") from None


def write_manifest(out: Path, manifest: dict) -> None:
    """Atomically (a temp file beside it, then a rename): a reader never sees half a manifest."""
    fd, tmp = tempfile.mkstemp(dir=out, prefix=".manifest.")
    with os.fdopen(fd, "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
    os.replace(tmp, Path(out) / MANIFEST)


def built_library(root: Path, meta: dict) -> Path | None:
    """The compiled file of a kernel's manifest entry, when the folder has it."""
    rel = meta.get("library")
    path = Path(root) / rel if rel else None
    return path if path is not None and path.is_file() else None


def shape_key(m: int, n: int, k: int, acc: str, dtype: str = "fp16", layout: str = "nn") -> str:
    """The manifest's key of a shape; the paper's fp16 nn keys keep their first form."""
    return f"{m}x{n}x{k}:{acc}" if (dtype, layout) == ("fp16", "nn") else f"{m}x{n}x{k}:{acc}:{dtype}:{layout}"


def write_library(out: Path, results, ui=None, builder=None, env: dict | None = None,
                  sources: dict[str, str] | None = None, extra: dict | None = None) -> dict:
    """manifest.json + kernels/NAME.cu for every kernel that won a shape; with a builder, also lib/libNAME.so.
    `sources` gives a kernel's text where it is not its family's current rendering (a base library's kernels);
    `extra` adds top-level manifest keys (the base a run extended).

    A shape whose best tuned kernel does not beat its fallback (torch.matmul, or cuBLASLt with its autotuned
    algorithm where that was faster) by more than the run's margin (`ShapeResult.decision`, `policy.decide`)
    dispatches to the fallback: the library never makes a shape slower than what the user had. What the written
    folder then runs (`routes`: a kernel that did not build runs the fallback) is what the closing line counts."""
    out = Path(out)
    (out / "kernels").mkdir(parents=True, exist_ok=True)
    shapes, kernels = {}, {}
    for r in results:
        p = r.problem
        dtype = getattr(p, "dtype", "fp16")
        entry = {"m": p.m, "n": p.n, "k": p.k, "acc": p.acc, "dtype": dtype, "layout": p.layout,
                 "time_us": r.best_us, "yardstick_us": r.yardstick_us,
                 "measured_us": r.measured, "failed": r.failed, "kernel": None, "dispatch": "fallback"}
        if r.best is None and not r.measured and not r.failed:
            entry["status"] = "not tuned yet"
        if getattr(r, "screening", None):  # a confirmation run picked: what the screening run had said
            entry["screening"] = r.screening
        if getattr(r, "carried_from", None):  # kept from a base library as it was, not measured in this run
            entry["carried_from"] = r.carried_from
        if r.fallback != "torch":  # cuBLASLt with the algorithm its search chose beat torch.matmul here
            entry["fallback"] = {"method": r.fallback, "algo": r.lt_algo, "time_us": r.fallback_us}
        if r.best is not None:
            entry.update(kernel=r.best.name, family=r.best.family, params=r.best.p)
            if r.decision.kind == policy.KERNEL:
                entry["dispatch"] = "kernel"
                kernels[r.best.name] = r.best
        shapes[shape_key(p.m, p.n, p.k, p.acc, dtype, p.layout)] = entry
    kernel_entries = {}
    for name, variant in sorted(kernels.items()):
        text = (sources or {}).get(name) or variant.source()
        (out / "kernels" / f"{name}.cu").write_text(text)
        entry = {**variant.to_dict(), "source": f"kernels/{name}.cu", "library": None}
        if builder is not None:
            built = builder.build(BuildRequest(text, name=name))
            if built.ok:
                (out / "lib").mkdir(exist_ok=True)
                shutil.copy2(built.lib_path, out / "lib" / f"lib{name}.so")
                entry["library"] = f"lib/lib{name}.so"
        kernel_entries[name] = entry
    native = None
    if builder is not None and any("fallback" in e for e in shapes.values()):  # the shim cuBLASLt is called through
        built = builder.build(native_lib.build_request(builder.toolchain))
        if built.ok:
            (out / "lib").mkdir(exist_ok=True)
            shutil.copy2(built.lib_path, out / "lib" / "libkr_blas.so")
            native = "lib/libkr_blas.so"
    manifest = {"kernelrl": __version__, "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                "env": env or {}, "shapes": shapes, "kernels": kernel_entries, "native": native, **(extra or {})}
    write_manifest(out, manifest)
    if ui is not None:
        runs = routes(out, manifest).values()
        used = sum(1 for r in runs if r.kind == policy.KERNEL)
        unbuilt = sum(1 for r in runs if r.reason == policy.NOT_USABLE)
        ui.stage(f"library {out}: {len(kernel_entries)} kernels; {used} of {len(shapes)} shapes use a tuned kernel"
                 + (f" ({unbuilt} more once `kernelrl library build {out}` builds their kernels)" if unbuilt else ""))
    return manifest


def routes(root: Path, manifest: dict) -> dict[str, policy.Route]:
    """What the library folder `root` runs for each shape of its manifest (keyed as the manifest keys them):
    `policy.route` over the manifest's tables, a kernel usable when lib/ holds it built, cuBLASLt callable when
    lib/libkr_blas.so is there. The tuner's closing table and `kernelrl library info` both say this; the runtime
    asks the same function, and adds only what a loaded library knows (a library tuned on another GPU)."""
    root = Path(root)
    kernels = manifest.get("kernels", {})
    shim = manifest.get("native")
    table, lt_algos = policy.tables(manifest, bool(shim and (root / shim).is_file()))

    def built(name: str) -> bool:
        return built_library(root, kernels.get(name, {})) is not None
    return {name: policy.route(policy.key(e["m"], e["n"], e["k"], e["acc"], e.get("dtype", "fp16"),
                                          e.get("layout", "nn")), table, lt_algos, usable=built)
            for name, e in manifest.get("shapes", {}).items()}
