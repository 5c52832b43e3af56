"""The nvcc builder: flags, toolchain discovery, cache keys, and (with nvcc) a few tiny real compiles."""

import ctypes
from pathlib import Path

import pytest

from kernelrl.build import toolchain as toolchain_mod
from kernelrl.build.builder import BuildRequest, LocalBuilder
from kernelrl.build.toolchain import Toolchain, ToolchainError, arch_flags

GOOD = """\
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stddef.h>

__global__ void kr_test_copy(const __half* a, __half* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i];
}

extern "C" int kernelrl_hgemm(const __half* A, const __half* B, __half* C, int M, int N, int K,
                              void* workspace, size_t workspace_bytes, cudaStream_t stream) {
    kr_test_copy<<<(M * N + 255) / 256, 256, 0, stream>>>(A, C, M * N);
    return (int)cudaGetLastError();
}
"""

BAD = """\
#include <cuda_runtime.h>
extern "C" int kernelrl_hgemm() {
    return kr_this_identifier_is_never_declared(1);
}
"""


# -- flags and discovery (no nvcc needed) --------------------------------------------------------------------

@pytest.mark.parametrize("arch", ["sm_90", "90a", "sm_90a", "9.0", "SM_90A", "compute_90"])
def test_hopper_gets_the_arch_specific_target(arch):
    assert arch_flags(arch) == ["-gencode", "arch=compute_90a,code=sm_90a"]


@pytest.mark.parametrize("arch, target", [("sm_80", "80"), ("8.6", "86"), ("sm_100a", "100a"), ("89", "89")])
def test_other_archs_keep_their_number(arch, target):
    assert arch_flags(arch) == ["-gencode", f"arch=compute_{target},code=sm_{target}"]


@pytest.mark.parametrize("arch", ["", "hopper", "sm_9", "sm_90b", "sm_1000"])
def test_bad_arch_raises_toolchain_error(arch):
    with pytest.raises(ToolchainError, match="sm_90a"):
        arch_flags(arch)


def test_discover_without_nvcc_says_so(monkeypatch):
    monkeypatch.setattr(toolchain_mod, "find_nvcc", lambda: None)
    with pytest.raises(ToolchainError, match="nvcc"):
        Toolchain.discover(arch="sm_90a", with_cutlass=False)


def test_discover_without_arch_or_gpu_asks_for_arch(monkeypatch):
    monkeypatch.setattr(toolchain_mod, "find_nvcc", lambda: "/opt/fake/bin/nvcc")
    monkeypatch.setattr(toolchain_mod, "detect_arch", lambda: None)
    monkeypatch.delenv("KERNELRL_ARCH", raising=False)
    with pytest.raises(ToolchainError, match="--arch"):
        Toolchain.discover(with_cutlass=False)


def test_discover_rejects_a_bad_arch_early(monkeypatch):
    monkeypatch.setattr(toolchain_mod, "find_nvcc", lambda: "/opt/fake/bin/nvcc")
    with pytest.raises(ToolchainError, match="unknown architecture"):
        Toolchain.discover(arch="hopper", with_cutlass=False)


# -- cache keys ----------------------------------------------------------------------------------------------

@pytest.fixture
def fake_builder(tmp_path):
    return LocalBuilder(Toolchain(nvcc="/opt/fake/bin/nvcc", version="13.0.88", arch="sm_90a"),
                        cache_dir=tmp_path / "build")


def test_key_is_stable(fake_builder):
    assert fake_builder.key(BuildRequest("int x;")) == fake_builder.key(BuildRequest("int x;"))


def test_key_changes_with_source(fake_builder):
    assert fake_builder.key(BuildRequest("int x;")) != fake_builder.key(BuildRequest("int y;"))


def test_key_changes_with_flags(fake_builder):
    assert fake_builder.key(BuildRequest("int x;")) != fake_builder.key(BuildRequest("int x;", flags=("-O1",)))


def test_key_changes_with_arch_and_nvcc_version(fake_builder, tmp_path):
    request = BuildRequest("int x;")
    other_arch = LocalBuilder(Toolchain("/opt/fake/bin/nvcc", "13.0.88", "sm_80"), cache_dir=tmp_path)
    other_nvcc = LocalBuilder(Toolchain("/opt/fake/bin/nvcc", "12.8.93", "sm_90a"), cache_dir=tmp_path)
    keys = {fake_builder.key(request), other_arch.key(request), other_nvcc.key(request)}
    assert len(keys) == 3


def test_key_ignores_the_display_name(fake_builder):
    assert fake_builder.key(BuildRequest("int x;", name="a")) == fake_builder.key(BuildRequest("int x;", name="b"))


def test_command_puts_the_origin_folder_first_on_the_include_path(fake_builder, tmp_path):
    request = BuildRequest("int x;", origin=str(tmp_path / "src" / "k.cu"), include_dirs=("/inc",))
    cmd = fake_builder.command(request, Path("/w/k.cu"), Path("/w/libk.so"))
    includes = [c for c in cmd if c.startswith("-I")]
    assert includes == [f"-I{tmp_path / 'src'}", "-I/inc"]
    assert cmd[0] == "/opt/fake/bin/nvcc"
    assert "arch=compute_90a,code=sm_90a" in cmd


# -- real compiles (few and tiny) ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def toolchain():
    return Toolchain.discover(arch="sm_90a", with_cutlass=False)


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("kernelrl-build-cache")


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELRL_CACHE", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def good_build(toolchain, cache_dir, tmp_path_factory):
    path = tmp_path_factory.mktemp("src") / "good_kernel.cu"
    path.write_text(GOOD)
    request = BuildRequest.from_file(path)
    return request, LocalBuilder(toolchain, cache_dir=cache_dir).build(request)


@pytest.mark.nvcc
def test_valid_candidate_builds(good_build):
    _, result = good_build
    assert result.ok, result.log
    assert result.error is None
    assert not result.cached
    assert Path(result.lib_path).is_file()


@pytest.mark.nvcc
def test_built_library_exports_the_entry_point(good_build):
    _, result = good_build
    lib = ctypes.CDLL(result.lib_path)
    assert hasattr(lib, "kernelrl_hgemm")


@pytest.mark.nvcc
def test_build_reports_ptxas_resources(good_build):
    _, result = good_build
    kernel = next(name for name in result.ptxas if "kr_test_copy" in name)
    assert result.ptxas[kernel]["registers"] > 0
    assert result.ptxas[kernel]["arch"] == "sm_90a"
    assert result.resources["kernels"] == 1 and result.resources["registers"] > 0


@pytest.mark.nvcc
def test_second_build_of_the_same_source_is_cached(good_build, toolchain, cache_dir):
    request, first = good_build
    again = LocalBuilder(toolchain, cache_dir=cache_dir).build(request)
    assert again.cached and again.ok
    assert (again.key, again.lib_path) == (first.key, first.lib_path)


@pytest.mark.nvcc
def test_a_cache_folder_given_relative_builds_as_an_absolute_one(toolchain, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # nvcc runs in a folder beneath the cache, which a relative path would miss
    path = tmp_path / "good_kernel.cu"
    path.write_text(GOOD)
    result = LocalBuilder(toolchain, cache_dir=Path("relative-cache")).build(BuildRequest.from_file(path))
    assert result.ok, result.log
    assert Path(result.lib_path).is_file()


@pytest.mark.nvcc
def test_syntax_error_names_the_users_file(toolchain, cache_dir, tmp_path):
    path = tmp_path / "bad_kernel.cu"
    path.write_text(BAD)
    result = LocalBuilder(toolchain, cache_dir=cache_dir).build(BuildRequest.from_file(path))
    assert not result.ok and result.lib_path is None
    assert result.error.startswith("compile error:")
    assert "kr_this_identifier_is_never_declared" in result.error
    assert str(path.resolve()) in result.error
    assert str(cache_dir) not in result.error and str(cache_dir) not in result.log


@pytest.mark.nvcc
def test_compile_timeout_is_reported(toolchain, tmp_path):
    builder = LocalBuilder(toolchain, timeout_s=0.01, cache_dir=tmp_path / "build")
    result = builder.build(BuildRequest(GOOD + "// timeout probe\n", name="slow"))
    assert not result.ok
    assert result.error.startswith("compile timeout")


@pytest.mark.nvcc
def test_compile_timeout_is_not_cached(toolchain, tmp_path):
    """A timeout says nothing about the source: a later build with time to finish must compile it."""
    request = BuildRequest(GOOD + "// timeout retry\n", name="retry")
    LocalBuilder(toolchain, timeout_s=0.01, cache_dir=tmp_path / "build").build(request)
    result = LocalBuilder(toolchain, timeout_s=600, cache_dir=tmp_path / "build").build(request)
    assert result.ok, result.error


@pytest.mark.nvcc
def test_build_many_returns_results_in_request_order(good_build, toolchain, cache_dir):
    good_request, _ = good_build
    # the first request compiles (and fails); the second is a cache hit that finishes first
    requests = [BuildRequest(BAD + "// order\n", name="first"),
                BuildRequest(good_request.source, name="second", origin=good_request.origin)]
    seen = []
    results = LocalBuilder(toolchain, cache_dir=cache_dir).build_many(requests, workers=2,
                                                                      on_done=lambda r: seen.append(r.name))
    assert [r.name for r in results] == ["first", "second"]
    assert [r.ok for r in results] == [False, True]
    assert seen == ["first", "second"]


# -- a cache that travels --------------------------------------------------------------------------------------------

def test_key_names_cutlass_headers_by_version_not_by_install_path(monkeypatch, tmp_path):
    from kernelrl.build import builder as mod
    here, there = "/usr/lib/site/cutlass_library", "/tmp/site/cutlass_library"
    keys = []
    for root in (here, there):
        monkeypatch.setattr(mod, "_known_header_roots", lambda root=root: {root: "nvidia-cutlass==4.2.0.0"})
        toolchain = Toolchain("/opt/fake/bin/nvcc", "13.0.88", "sm_90a", include_dirs=(root + "/source/include",))
        keys.append(LocalBuilder(toolchain, cache_dir=tmp_path).key(BuildRequest("int x;")))
    assert keys[0] == keys[1]


def test_key_keeps_other_include_paths(fake_builder):
    assert fake_builder.key(BuildRequest("int x;", include_dirs=("/a",))) != \
        fake_builder.key(BuildRequest("int x;", include_dirs=("/b",)))


@pytest.mark.nvcc
def test_a_moved_cache_still_serves_its_libraries(good_build, toolchain, cache_dir, tmp_path):
    import shutil
    request, first = good_build
    moved = tmp_path / "carried"
    shutil.copytree(cache_dir, moved)
    again = LocalBuilder(toolchain, cache_dir=moved).build(request)
    assert again.cached and again.ok
    assert Path(again.lib_path).parent.parent == moved and Path(again.lib_path).is_file()


def test_key_follows_the_target_nvcc_builds_not_the_arch_label(fake_builder, tmp_path):
    detected = LocalBuilder(Toolchain("/opt/fake/bin/nvcc", "13.0.88", "sm_90"), cache_dir=tmp_path)
    assert detected.key(BuildRequest("int x;")) == fake_builder.key(BuildRequest("int x;"))  # both sm_90a code


def test_key_of_a_self_contained_source_ignores_the_folder_it_sat_in(fake_builder):
    """A generated kernel written to a fresh temporary folder each run still finds the build made before."""
    here = BuildRequest("int x;", origin="/tmp/run1/k.cu")
    there = BuildRequest("int x;", origin="/tmp/run2/k.cu")
    assert fake_builder.key(here) == fake_builder.key(there)


def test_key_of_a_source_with_a_quoted_include_keeps_its_folder(fake_builder):
    """`#include "tile.h"` resolves against the file's folder: another folder may hold another tile.h."""
    source = '#include "tile.h"\nint x;'
    here = BuildRequest(source, origin="/src/a/k.cu")
    there = BuildRequest(source, origin="/src/b/k.cu")
    assert fake_builder.key(here) != fake_builder.key(there)
