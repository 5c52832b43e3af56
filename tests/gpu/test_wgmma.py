"""Representative points of the wgmma family through the evaluator on the GPU: both B layouts, both accumulators, one,
two and three consumer warpgroups, cooperative and ping-pong, 256-row tiles (two m64 blocks per consumer) and
192-row ones (three consumers), split-K (with either accumulator; reduced by a second kernel or in-kernel by the
last slice to arrive), direct and TMA-store epilogues (whole or subtiled), 2-CTA clusters that multicast B or A,
split-K summed in distributed shared memory, tile widths of any multiple of 16 on the paper's layout, shapes with
partial tiles in M, N and K, the main kernel launched programmatically. Every check the evaluator makes (random,
secret, near-duplicate, 0/1 and accumulator inputs, guards, poisoned workspace, device state, timing re-checks) must
pass wherever the point supports the shape."""

import pytest

from kernelrl.jobs.measure import BenchConfig, NullUI, run_bench
from kernelrl.run.runner import RunSettings
from kernelrl.space import SPACES, Variant
from kernelrl.workloads.hgemm import GemmProblem, parse_shapes

pytestmark = pytest.mark.gpu
SHAPES = "64x64x64,333x200x72,1024x1024x1024,256x512x4096"


def point(acc, bm, bn, stages, raster, layout, split_k=1, schedule="cooperative", epilogue="direct", pdl=False,
          cluster="1x1", split_reduce="workspace", main_pdl=False):
    return Variant.of("wgmma", acc, BM=bm, BN=bn, stages=stages, raster=raster, b_layout=layout, split_k=split_k,
                      schedule=schedule, epilogue=epilogue, pdl=pdl, cluster=cluster, split_reduce=split_reduce,
                      main_pdl=main_pdl)


@pytest.mark.parametrize("acc, points", [
    ("fp32", [point("fp32", 128, 256, 4, 8, "kn"), point("fp32", 64, 128, 6, 1, "kn", split_k=2),
              point("fp32", 128, 128, 6, 8, "nk", schedule="pingpong"),
              point("fp32", 64, 256, 4, 8, "kn", split_k=4, schedule="pingpong"),
              point("fp32", 128, 256, 3, 8, "kn", epilogue="tma"),
              point("fp32", 64, 128, 8, 1, "kn", split_k=8, pdl=True),  # the reduce launched programmatically
              # CTA pairs multicasting B (odd tile rows at 333 and 64: the second CTA's tile is past the edge) and A
              point("fp32", 128, 256, 3, 8, "kn", epilogue="tma", cluster="2x1"),
              point("fp32", 64, 128, 6, 1, "nk", cluster="1x2"),
              # split-K slices summed through distributed shared memory, one kernel (333x200: a partial column tile)
              point("fp32", 64, 128, 8, 1, "kn", split_k=4, split_reduce="dsmem"),
              point("fp32", 128, 128, 5, 8, "nk", split_k=2, split_reduce="dsmem"),
              # widths off the 64-column box: kn B in 32-column (64-byte swizzle) and 16-column (32-byte) boxes,
              # one of them multicast by a CTA pair; nk with an odd multiple of 16
              point("fp32", 64, 96, 8, 1, "kn"), point("fp32", 128, 176, 4, 8, "kn", cluster="2x1"),
              point("fp32", 64, 80, 8, 1, "nk"),
              # split-K summed in-kernel by each tile's last slice to arrive, both schedules
              point("fp32", 64, 128, 8, 1, "kn", split_k=4, split_reduce="fixup"),
              point("fp32", 128, 128, 6, 8, "nk", split_k=2, schedule="pingpong", split_reduce="fixup"),
              # the main kernel launched programmatically: alone, before a reduce kernel, before a PDL reduce
              point("fp32", 128, 128, 6, 8, "kn", schedule="pingpong", main_pdl=True),
              point("fp32", 64, 128, 8, 1, "kn", split_k=4, main_pdl=True),
              point("fp32", 64, 128, 8, 1, "kn", split_k=8, pdl=True, main_pdl=True),
              # 256-row tiles: two cooperative consumers of 128 rows (two m64 blocks each), both layouts, split-K
              # (333 and 64 rows: partial tiles; 1024: four tile rows)
              point("fp32", 256, 128, 4, 8, "kn"), point("fp32", 256, 128, 4, 8, "nk", split_k=2),
              point("fp32", 256, 64, 4, 8, "kn", epilogue="tma"),
              # the fastest 256-row point on the H100 (benchmarks/results/h100/wgmma_bm256), its CTA pairs sharing B
              point("fp32", 256, 128, 3, 8, "kn", epilogue="tma", cluster="2x1"),
              # 192-row tiles: three cooperative consumers of 64 rows (333 rows: a partial second tile), the TMA
              # store and split-K among them
              point("fp32", 192, 128, 4, 8, "nk"), point("fp32", 192, 128, 4, 8, "kn", epilogue="tma"),
              point("fp32", 192, 176, 3, 8, "kn", split_k=2),
              # the subtiled TMA store (two staging boxes a consumer, one stored while the next is written): 256 rows
              # with the fourth stage it makes room for, both layouts; ping-pong consumers; 64 rows, one box a tile
              point("fp32", 256, 128, 4, 8, "kn", epilogue="tma_sub"),
              point("fp32", 256, 128, 4, 8, "nk", epilogue="tma_sub"),
              point("fp32", 128, 128, 5, 8, "kn", schedule="pingpong", epilogue="tma_sub"),
              point("fp32", 64, 64, 8, 1, "nk", epilogue="tma_sub")]),
    ("fp16", [point("fp16", 128, 128, 4, 8, "kn", schedule="pingpong"), point("fp16", 64, 96, 8, 1, "nk"),
              point("fp16", 128, 128, 4, 8, "nk", schedule="pingpong", epilogue="tma"),
              point("fp16", 128, 128, 5, 8, "nk", schedule="pingpong", cluster="1x2"),
              point("fp16", 64, 128, 6, 8, "kn", cluster="2x1"),
              point("fp16", 128, 80, 6, 8, "kn", schedule="pingpong"), point("fp16", 64, 112, 6, 1, "kn"),
              # split-K with fp16 accumulators: slices widened into fp32 partials, reduced by a kernel (by PDL)
              point("fp16", 64, 64, 12, 1, "kn", split_k=4, schedule="pingpong"),
              point("fp16", 128, 128, 6, 8, "nk", split_k=2, pdl=True),
              point("fp16", 64, 64, 12, 1, "kn", split_k=8, split_reduce="fixup"),
              point("fp16", 128, 128, 4, 8, "nk", schedule="pingpong", epilogue="tma", main_pdl=True),
              point("fp16", 256, 256, 3, 8, "kn"), point("fp16", 256, 128, 3, 8, "nk", epilogue="tma"),
              point("fp16", 128, 256, 4, 8, "kn", epilogue="tma_sub")]),
])
def test_points_verify_in_device_and_offline_modes(tmp_path, acc, points):
    files = []
    for v in points:
        path = tmp_path / f"{v.name}.cu"
        path.write_text(v.source())
        files.append(str(path))
    cfg = BenchConfig(problems=parse_shapes(SHAPES, acc=acc), modes=["device", "offline"], candidates=files,
                      baselines=["cublas_nn"], db_path=tmp_path / "r.db", settings=RunSettings(rounds=3,
                                                                                               hang_timeout_s=30))
    outcome = run_bench(cfg, NullUI())
    by_name = {v.name: v for v in points}

    def declined(r):  # a split-K point on a K with fewer k-steps than slices, as the family says
        v = by_name.get(r["method"])
        return v is not None and (r["reason"] or "").startswith("unsupported") and \
            SPACES["wgmma"].supports(v, GemmProblem(r["m"], r["n"], r["k"], acc)) is not None

    bad = [(r["method"], r["m"], r["n"], r["k"], r["mode"], r["reason"]) for r in outcome.rows
           if not r["verified"] and not declined(r)]
    assert not bad
    assert {r["method"] for r in outcome.rows} >= {v.name for v in points}


def test_nt_problems_verify_nk_points_beside_the_baselines_that_read_w(tmp_path):
    """nn.Linear's layout: an nk point and F.linear's product (torch) and cuBLAS TN verify; a kn point and the NN
    baseline are `unsupported` (they would need B as K x N, which an nt caller does not hold)."""
    nk, kn = point("fp32", 128, 128, 6, 8, "nk", schedule="pingpong"), point("fp32", 128, 128, 6, 8, "kn")
    files = []
    for v in (nk, kn):
        path = tmp_path / f"{v.name}.cu"
        path.write_text(v.source())
        files.append(str(path))
    cfg = BenchConfig(problems=parse_shapes("256x512x1024,333x200x72", acc="fp32", layout="nt"), modes=["device"],
                      candidates=files, baselines=["torch", "cublas_tn", "cublas_nn"], db_path=tmp_path / "r.db",
                      settings=RunSettings(rounds=3, hang_timeout_s=30))
    rows = run_bench(cfg, NullUI()).rows
    for r in rows:
        if r["method"] in (nk.name, "torch", "cublas_tn"):
            assert r["verified"], (r["method"], r["reason"])
        else:
            assert not r["verified"] and r["reason"].startswith("unsupported"), (r["method"], r["reason"])


@pytest.mark.parametrize("layout, baselines", [("nn", ["torch", "cublas_nn", "cublaslt_auto_nn"]),
                                               ("nt", ["torch", "cublas_tn", "cublaslt_auto_tn"])])
def test_bf16_points_verify_beside_bf16_baselines(tmp_path, layout, baselines):
    """bf16 inputs and output, fp32 accumulation: the point of the layout and every baseline that reads its B."""
    v = point("fp32", 128, 128, 6, 8, "kn" if layout == "nn" else "nk", split_k=1, schedule="pingpong")
    v = Variant.of("wgmma", "fp32", **{**v.p, "dtype": "bf16"})
    path = tmp_path / f"{v.name}.cu"
    path.write_text(v.source())
    cfg = BenchConfig(problems=parse_shapes("256x512x1024,333x200x72", acc="fp32", layout=layout, dtype="bf16"),
                      modes=["device"], candidates=[str(path)], baselines=baselines, db_path=tmp_path / "r.db",
                      settings=RunSettings(rounds=3, hang_timeout_s=30))
    bad = [(r["method"], r["m"], r["reason"]) for r in run_bench(cfg, NullUI()).rows if not r["verified"]]
    assert not bad


@pytest.mark.parametrize("acc, bm, bn, stages, split_k, schedule", [("fp32", 64, 128, 8, 4, "cooperative"),
                                                                     ("fp32", 64, 64, 12, 16, "cooperative"),
                                                                     ("fp16", 64, 64, 12, 8, "pingpong")])
def test_the_split_k_fixup_stores_what_the_reduce_kernel_stores_bit_for_bit(acc, bm, bn, stages, split_k, schedule):
    """Both add the slices in slice order from zero, so which slice arrives last never changes C: called repeatedly
    (arrival order differs call to call) the fixup's C equals the workspace twin's exactly, partial tiles included."""
    import torch

    from kernelrl.build.builder import BuildRequest, LocalBuilder
    from kernelrl.build.toolchain import Toolchain
    from kernelrl.run.methods import Candidate

    builder = LocalBuilder(Toolchain.discover())
    m, n, k = 333, 200, 4096
    torch.manual_seed(0)
    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    b = torch.randn(k, n, device="cuda", dtype=torch.float16)
    outputs = {}
    for reduce in ("workspace", "fixup"):
        v = point(acc, bm, bn, stages, 1, "kn", split_k=split_k, schedule=schedule, split_reduce=reduce)
        built = builder.build(BuildRequest(v.source(), name=v.name))
        assert built.ok, built.error
        kernel = Candidate(v.name, built.lib_path)
        ws_bytes = kernel.workspace_bytes(m, n, k)
        ws = torch.empty(max(ws_bytes, 1), device="cuda", dtype=torch.uint8)
        calls = []
        for _ in range(5):
            c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
            rc = kernel.fn(a.data_ptr(), b.data_ptr(), c.data_ptr(), m, n, k, ws.data_ptr(), ws_bytes,
                           torch.cuda.current_stream().cuda_stream)
            assert rc == 0
            calls.append(c)
        torch.cuda.synchronize()
        outputs[reduce] = calls
    for c in outputs["workspace"] + outputs["fixup"]:
        assert torch.equal(c, outputs["workspace"][0])
