"""First light of the wgmma family on a GPU: build a few points, call each directly (ctypes, no evaluator) on a few
shapes, and say per point and shape whether it returned, finished within a time limit, and matched torch.matmul,
with a look at where it went wrong when it did not. A hang is caught by running each point in a child process (its
later shapes are then not tried).

    python benchmarks/suites/wgmma_smoke.py --out wgmma_smoke.md [--points NAME ... | --clusters] [--shapes MxNxK ...]

Exit status 0 only when every point matched on every shape it supports (a gate before spending time in
`kernelrl bench`)."""

from __future__ import annotations

import argparse
import ctypes
import multiprocessing as mp
import sys
import tempfile
from pathlib import Path

from kernelrl.build.builder import BuildRequest, LocalBuilder
from kernelrl.build.toolchain import Toolchain
from kernelrl.environment import collect
from kernelrl.space import Variant

# (acc, BM, BN, stages, raster, b_layout, split_k, schedule[, dtype, epilogue, cluster, split_reduce])
POINTS = {
    "wgmma_f32_kn_128x256x64_s4_r8_k1_co": ("fp32", 128, 256, 4, 8, "kn", 1, "cooperative"),
    "wgmma_f32_kn_128x128x64_s6_r8_k1_pp": ("fp32", 128, 128, 6, 8, "kn", 1, "pingpong"),
    "wgmma_f32_kn_64x128x64_s8_r1_k8_co": ("fp32", 64, 128, 8, 1, "kn", 8, "cooperative"),
    "wgmma_f32_nk_128x128x64_s6_r8_k2_pp": ("fp32", 128, 128, 6, 8, "nk", 2, "pingpong"),
    "wgmma_f16_nk_64x96x64_s8_r1_k1_co": ("fp16", 64, 96, 8, 1, "nk", 1, "cooperative"),
    "wgmma_f16_kn_128x128x64_s5_r8_k1_pp": ("fp16", 128, 128, 5, 8, "kn", 1, "pingpong"),
    "wgmma_bf16f32_nk_128x128x64_s6_r8_k1_pp": ("fp32", 128, 128, 6, 8, "nk", 1, "pingpong", "bf16"),
    "wgmma_f32_kn_128x256x64_s3_r8_k1_co_et": ("fp32", 128, 256, 3, 8, "kn", 1, "cooperative", "fp16", "tma"),
    "wgmma_f16_kn_128x128x64_s4_r8_k1_pp_et": ("fp16", 128, 128, 4, 8, "kn", 1, "pingpong", "fp16", "tma"),
}
# Points launched as thread-block clusters, their own gate (benchmarks/device/wgmma.sh): 2-CTA pairs with TMA multicast
# (B shared: 2x1, A shared: 1x2) and split-K summed in distributed shared memory (a cluster per tile)
CLUSTER_POINTS = {
    "wgmma_f32_kn_128x256x64_s3_r8_k1_co_et_c2x1": ("fp32", 128, 256, 3, 8, "kn", 1, "cooperative", "fp16", "tma",
                                                    "2x1"),
    "wgmma_f32_nk_64x128x64_s6_r1_k1_co_c1x2": ("fp32", 64, 128, 6, 1, "nk", 1, "cooperative", "fp16", "direct", "1x2"),
    "wgmma_f16_kn_128x128x64_s5_r8_k1_pp_c2x1": ("fp16", 128, 128, 5, 8, "kn", 1, "pingpong", "fp16", "direct", "2x1"),
    "wgmma_f32_kn_64x128x64_s8_r1_k4_co_dsm": ("fp32", 64, 128, 8, 1, "kn", 4, "cooperative", "fp16", "direct", "1x1",
                                               "dsmem"),
    "wgmma_f32_nk_128x128x64_s5_r8_k2_co_dsm": ("fp32", 128, 128, 5, 8, "nk", 2, "cooperative", "fp16", "direct",
                                                "1x1", "dsmem"),
}
SHAPES = ["64x64x64", "256x512x128", "1000x1000x1000", "2048x2048x2048", "256x512x16384"]


def variant(name: str) -> Variant:
    acc, bm, bn, stages, raster, layout, split_k, schedule, *rest = {**POINTS, **CLUSTER_POINTS}[name]
    dtype, epilogue, cluster, reduce = (list(rest) + ["fp16", "direct", "1x1", "workspace"][len(rest):])[:4]
    return Variant.of("wgmma", acc, BM=bm, BN=bn, stages=stages, raster=raster, b_layout=layout, split_k=split_k,
                      schedule=schedule, dtype=dtype, epilogue=epilogue, cluster=cluster, split_reduce=reduce)


def run_point(lib_path: str, layout: str, acc: str, shapes: list[str], queue, dtype_name: str = "fp16") -> None:
    """In a child process: every shape in turn, one result each on the queue as soon as it is known."""
    import torch
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[dtype_name]
    lib = ctypes.CDLL(lib_path)
    fn = lib.kernelrl_hgemm
    vp, i = ctypes.c_void_p, ctypes.c_int
    fn.argtypes, fn.restype = [vp, vp, vp, i, i, i, vp, ctypes.c_size_t, vp], i
    lib.kernelrl_hgemm_supports.argtypes = lib.kernelrl_hgemm_workspace.argtypes = [i, i, i]
    lib.kernelrl_hgemm_supports.restype, lib.kernelrl_hgemm_workspace.restype = i, ctypes.c_size_t
    for shape in shapes:
        m, n, k = (int(x) for x in shape.split("x"))
        if not lib.kernelrl_hgemm_supports(m, n, k):
            queue.put((shape, "unsupported", "kernelrl_hgemm_supports says no"))
            continue
        ws_bytes = lib.kernelrl_hgemm_workspace(m, n, k)
        ws = torch.full((max(ws_bytes, 1),), 0xFF, device="cuda", dtype=torch.uint8)  # poisoned, as the evaluator does
        torch.manual_seed(0)
        a = torch.randn(m, k, device="cuda", dtype=dtype)
        b = torch.randn(k, n, device="cuda", dtype=dtype)
        b_arg = b.t().contiguous() if layout == "nk" else b
        c = torch.full((m, n), float("nan"), device="cuda", dtype=dtype)
        rc = fn(a.data_ptr(), b_arg.data_ptr(), c.data_ptr(), m, n, k, ws.data_ptr() if ws_bytes else None, ws_bytes,
                torch.cuda.current_stream().cuda_stream)
        torch.cuda.synchronize()
        if rc:
            queue.put((shape, "error", f"returned {rc}"))
            continue
        ref = a.float() @ b.float()
        diff = (c.float() - ref).abs().nan_to_num(1e9)
        bad = diff > ((0.04 if dtype_name == "bf16" else 0.02) * ref.abs()
                      + 0.05 * (k ** 0.5) * (0.25 if acc == "fp32" else 1.0))
        if bad.any():
            rows, cols = bad.nonzero(as_tuple=True)
            queue.put((shape, "wrong", f"{int(bad.sum())} of {m * n} wrong, max abs error {float(diff.max()):.3g}; "
                       f"first at ({int(rows[0])}, {int(cols[0])}): got {float(c[rows[0], cols[0]]):.4g}, want "
                       f"{float(ref[rows[0], cols[0]]):.4g}; wrong rows {int(rows.min())}..{int(rows.max())}, cols "
                       f"{int(cols.min())}..{int(cols.max())}; NaN {int(c.isnan().sum())}"))
        else:
            queue.put((shape, "ok", f"max abs error {float(diff.max()):.3g}"))


def check_point(lib_path, layout, acc, shapes, timeout_s=40.0, dtype="fp16") -> list[tuple[str, str, str]]:
    """(shape, status, detail) per shape: ok, wrong, error, or for the shape it stopped at, hang or crash."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=run_point, args=(lib_path, layout, acc, shapes, queue, dtype))
    proc.start()
    proc.join(timeout_s)
    hung = proc.is_alive()
    if hung:
        proc.kill()
        proc.join()
    results = []
    while not queue.empty():
        results.append(queue.get())
    if len(results) < len(shapes):
        stopped = shapes[len(results)]
        results.append((stopped, "hang", f"no answer within {timeout_s:.0f} s") if hung
                       else (stopped, "crash", f"exit code {proc.exitcode}"))
    return results


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--points", nargs="*", default=None, help="point names (default: POINTS)")
    ap.add_argument("--clusters", action="store_true",
                    help="the points launched as clusters (CLUSTER_POINTS) instead")
    ap.add_argument("--shapes", nargs="*", default=SHAPES)
    args = ap.parse_args(argv)
    names = args.points or list(CLUSTER_POINTS if args.clusters else POINTS)
    variants = [variant(p) for p in names]
    builder = LocalBuilder(Toolchain.discover(arch="sm_90a", with_cutlass=False),
                           cache_dir=Path(tempfile.mkdtemp(prefix="wgmma-smoke-")))
    built = builder.build_many([BuildRequest(v.source(), name=v.name) for v in variants], workers=8)
    lines = [f"# wgmma first light\n\n- command: `python benchmarks/suites/wgmma_smoke.py {' '.join(sys.argv[1:])}`",
             f"- environment: {collect({'mode': 'smoke'})}\n", "| point | shape | result | detail |",
             "|---|---|---|---|"]
    all_ok = True
    for v, result in zip(variants, built):
        if not result.ok:
            lines.append(f"| {v.name} | all | build failed | {(result.error or result.log[-300:])!r} |")
            all_ok = False
            continue
        regs = [info.get("registers") for info in result.ptxas.values()]
        results = check_point(result.lib_path, v.p["b_layout"], v.acc, args.shapes, dtype=v.p["dtype"])
        all_ok &= len(results) == len(args.shapes) and all(status in ("ok", "unsupported") for _, status, _ in results)
        for shape, status, detail in results:
            lines.append(f"| {v.name} (regs {regs}) | {shape} | {status} | {detail} |")
            print(lines[-1], flush=True)
    args.out.write_text("\n".join(lines) + "\n")
    print(f"{'all ok' if all_ok else 'NOT all ok'}: {args.out}")
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
