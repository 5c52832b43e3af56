"""`kernelrl library build LIB`: compile a tuned library's `lib/` from its `kernels/*.cu` on this machine (the
builder's content-hash cache makes a rebuild of an unchanged kernel free; kernels build in parallel), and the cuBLAS
shim where a shape's fallback is cuBLASLt. A library copied to another machine, or committed without its binaries,
becomes whole again; what cannot be built is said, one line per kernel, and stays on the fallback."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from kernelrl.baselines import native_lib
from kernelrl.build.builder import BuildRequest, LocalBuilder
from kernelrl.build.toolchain import Toolchain
from kernelrl.library import policy
from kernelrl.library.export import built_library, read_manifest, routes, write_manifest
from kernelrl.library.policy import LT_FALLBACKS


@dataclass
class LibraryBuild:
    built: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)  # kernel name -> its build verdict
    native: str | None = None  # the cuBLAS shim's path, when a fallback needs it and it built


def build_library(root: str | Path, builder=None, workers: int | None = None, on_done=None,
                  kernels_only: bool = False) -> LibraryBuild:
    """Build every kernel the manifest names into lib/, update the manifest (atomically), and report. With
    `kernels_only` the cuBLAS shim is left for later (a CPU machine with nvcc but no cuBLAS building ahead for a GPU
    machine, whose build then finds the kernels in its cache)."""
    root = Path(root)
    manifest = read_manifest(root)
    builder = builder or LocalBuilder(Toolchain.discover())
    requests, out = [], LibraryBuild()
    for name, meta in sorted(manifest.get("kernels", {}).items()):
        source = root / meta.get("source", f"kernels/{name}.cu")
        if not source.is_file():
            out.failed[name] = f"its source {source} is missing"
            continue
        requests.append(BuildRequest(source.read_text(), name=name))
    needs_shim = any((e.get("fallback") or {}).get("method") in LT_FALLBACKS.values()
                     for e in manifest.get("shapes", {}).values())
    if needs_shim and not kernels_only:
        requests.append(native_lib.build_request(builder.toolchain))
    (root / "lib").mkdir(exist_ok=True)
    for result in builder.build_many(requests, workers=workers, on_done=on_done):
        if not result.ok:
            out.failed[result.name] = result.error or "build failed"
            continue
        target = root / "lib" / f"lib{result.name}.so"
        shutil.copy2(result.lib_path, target)
        if result.name == "kr_blas":
            out.native = manifest["native"] = f"lib/{target.name}"
        else:
            manifest["kernels"][result.name]["library"] = f"lib/{target.name}"
            out.built.append(result.name)
    write_manifest(root, manifest)
    return out


def library_info(root: str | Path) -> list[str]:
    """What a library holds and where its shapes go, as lines for people."""
    root = Path(root)
    manifest = read_manifest(root)
    kernels = manifest.get("kernels", {})
    shapes = manifest.get("shapes", {})
    missing = sorted(n for n, meta in kernels.items() if built_library(root, meta) is None)
    env = manifest.get("env") or {}
    shim = bool(manifest.get("native")) and (root / manifest["native"]).is_file()
    first = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
    lines = [f"{root}: kernelrl {manifest.get('kernelrl', '?')}, written {manifest.get('created', '?')}",
             f"tuned on: {env.get('gpu') or 'unknown GPU'} (driver {env.get('driver') or '?'}, torch "
             f"{env.get('torch') or '?'}, arch {env.get('arch') or '?'})",
             f"kernels: {len(kernels)}, {len(kernels) - len(missing)} built in lib/"
             + (f"; not built: {first} (run `kernelrl library build {root}`)" if missing else "")]
    decided = routes(root, manifest)
    by_route: dict[str, int] = {}
    for name, entry in shapes.items():
        route = _info_route(entry, decided[name], shim)
        by_route[route] = by_route.get(route, 0) + 1
    kinds: dict[str, int] = {}
    for entry in shapes.values():
        kind = f"{entry.get('layout', 'nn')} {entry.get('dtype', 'fp16')}"
        kinds[kind] = kinds.get(kind, 0) + 1
    lines.append(f"shapes: {len(shapes)} ({', '.join(f'{k}: {n}' for k, n in sorted(kinds.items()))})")
    lines += [f"  {count:5d}  {route}" for route, count in sorted(by_route.items(), key=lambda kv: -kv[1])]
    return lines


def _info_route(entry: dict, decided: policy.Route, shim: bool) -> str:
    """What `library info` says a manifest shape runs (`decided`: its `routes` answer, a kernel usable when built),
    and where that is not what the manifest stored, why."""
    runs = decided.name or "torch"
    if decided.reason == policy.NOT_USABLE:
        return f"kernel {entry['kernel']} (not built: runs {runs})"
    if decided.kind == policy.KERNEL:
        return f"kernel {runs}"
    stored = entry.get("fallback") or {}
    method = stored.get("method") or "torch"
    if method in LT_FALLBACKS.values() and decided.kind != policy.LT:  # stored, but not callable (policy.tables)
        why = ("no lib/libkr_blas.so" if not shim else "no stored algorithm" if not stored.get("algo")
               else f"no cuBLASLt call for {entry.get('layout', 'nn')} {entry.get('dtype', 'fp16')}")
        return f"{method} ({why}: runs {runs})"
    return runs
