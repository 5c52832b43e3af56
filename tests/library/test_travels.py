"""A tuned library that travels: a library without its binaries says so in one line (never a silent fallback),
`kernelrl library build` makes lib/ from kernels/*.cu, and `kernelrl library info` says where each shape goes. On
the CPU, with the toy family of test_tune and a stand-in builder (nvcc is not needed to test the bookkeeping)."""

import json

from kernelrl.build.builder import BuildResult
from kernelrl.cli import main
from kernelrl.library.build import build_library, library_info
from kernelrl.library.runtime import Library
from tests.tune.test_tune import run_tune


class StandInBuilder:
    """Writes a file per request where a compiler would put the shared library; `fail` names builds that fail."""

    toolchain = None

    def __init__(self, tmp_path, fail=()):
        self.dir, self.fail = tmp_path / "built", set(fail)
        self.dir.mkdir()

    def build_many(self, requests, workers=None, on_done=None):
        out = []
        for r in requests:
            if r.name in self.fail:
                out.append(BuildResult(name=r.name, key="k", ok=False, error="compile error: stand-in failure"))
                continue
            path = self.dir / f"lib{r.name}.so"
            path.write_text(r.source)
            out.append(BuildResult(name=r.name, key="k", ok=True, lib_path=str(path)))
        return out


def tuned(tmp_path):
    run_tune(tmp_path)
    return tmp_path / "lib"


def test_a_library_without_its_binaries_says_so_in_one_line(tmp_path, capsys):
    lib = Library(tuned(tmp_path))
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "are not built in lib/" in err[0] and "kernelrl library build" in err[0]
    assert lib.missing and lib.choose(64, 64, 64) is None  # the shape runs torch.matmul, and the user was told


def test_library_build_makes_lib_and_the_library_whole(tmp_path, capsys):
    root = tuned(tmp_path)
    result = build_library(root, builder=StandInBuilder(tmp_path))
    manifest = json.loads((root / "manifest.json").read_text())
    assert result.built and not result.failed
    assert all((root / m["library"]).is_file() for m in manifest["kernels"].values())
    capsys.readouterr()
    assert Library(root).missing == [] and capsys.readouterr().err == ""


def test_a_kernel_that_does_not_build_is_named_and_stays_on_its_fallback(tmp_path):
    root = tuned(tmp_path)
    name = sorted(json.loads((root / "manifest.json").read_text())["kernels"])[0]
    result = build_library(root, builder=StandInBuilder(tmp_path, fail={name}))
    assert result.failed == {name: "compile error: stand-in failure"}
    assert any("not built" in line and name in line for line in library_info(root))


def test_library_info_says_where_each_shape_goes(tmp_path, capsys):
    root = tuned(tmp_path)
    assert main(["library", "info", str(root)]) == 0
    out = capsys.readouterr().out
    assert "shapes: 3" in out and "kernels:" in out and "kernelrl library build" in out


def built_on(tmp_path, monkeypatch, tuned_on: str, here: str, env: dict | None = None, sms: int = 132):
    """A built library whose manifest says it was tuned on `tuned_on` (and `env`), loaded as if this machine's GPU
    were `here` with `sms` SMs and compute capability 9.0."""
    import types

    import torch
    root = tuned(tmp_path)
    build_library(root, builder=StandInBuilder(tmp_path))
    props = types.SimpleNamespace(name=here, multi_processor_count=sms, major=9, minor=0)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda index=None: props)
    manifest = json.loads((root / "manifest.json").read_text())
    manifest["env"] = {"gpu": tuned_on, **(env or {})}
    (root / "manifest.json").write_text(json.dumps(manifest))
    return root


def test_a_library_tuned_on_another_gpu_says_so_and_runs_the_fallback(tmp_path, capsys, monkeypatch):
    root = built_on(tmp_path, monkeypatch, "NVIDIA H200", "NVIDIA H100 80GB HBM3")
    capsys.readouterr()
    lib = Library(root)
    err = capsys.readouterr().err
    assert lib.foreign == "NVIDIA H200" and "gpu NVIDIA H200 there, NVIDIA H100 80GB HBM3 here" in err
    assert lib.choose(64, 64, 64) is None


def test_the_same_gpu_name_with_other_sms_is_another_gpu(tmp_path, capsys, monkeypatch):
    root = built_on(tmp_path, monkeypatch, "NVIDIA H200", "NVIDIA H200", env={"sm_count": 132,
                                                                              "compute_capability": "9.0"}, sms=114)
    capsys.readouterr()
    lib = Library(root)
    assert lib.foreign == "NVIDIA H200" and "sm_count 132 there, 114 here" in capsys.readouterr().err


def test_a_library_on_the_gpu_it_was_tuned_on_keeps_its_kernels(tmp_path, monkeypatch):
    lib = Library(built_on(tmp_path, monkeypatch, "NVIDIA H200", "NVIDIA H200"))
    assert lib.foreign is None and any(name is not None for name in lib.table.values())


def test_kernels_only_leaves_the_cublas_shim_for_the_gpu_machine(tmp_path):
    root = tuned(tmp_path)
    manifest = json.loads((root / "manifest.json").read_text())
    next(iter(manifest["shapes"].values()))["fallback"] = {"method": "cublaslt_auto_nn", "algo": "00", "time_us": 1.0}
    (root / "manifest.json").write_text(json.dumps(manifest))
    builder = StandInBuilder(tmp_path)
    result = build_library(root, builder=builder, kernels_only=True)  # the shim would need cuBLAS's headers
    assert result.built and result.native is None and not (root / "lib" / "libkr_blas.so").exists()
    assert sorted(result.built) == sorted(manifest["kernels"])
