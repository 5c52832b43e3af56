"""benchmarks/suites/cuda_l2_census.py: a source read of CUDA-L2 files through the adapter (the accumulator the code
uses, device synchronizes in the code) and a seeded, class-balanced pick of files for the GPU comparison."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks" / "suites"))
import cuda_l2_census  # noqa: E402

FUNCTION = ("void cuda_l2_h100_fp32(torch::Tensor a, torch::Tensor b, torch::Tensor b_col_major, torch::Tensor c) "
            "{{\n{}\n}}\n")


def folder(tmp_path):
    files = {
        "64_64_64.cu": FUNCTION.format("  // cudaDeviceSynchronize(); in a comment only"),
        "1024_1024_1024.cu": ("using op = SM80_16x8x16_F16F16F16F16_TN;\n"
                              + FUNCTION.format("  cudaDeviceSynchronize();")),
        "4096_4096_4096.cu": "using op = SM80_16x8x16_F32F16F16F32_TN;\n" + FUNCTION.format(""),
        "2048_2048_64.cu": "__global__ void k() {}\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return tmp_path


def test_the_census_reads_the_accumulator_and_the_device_synchronizes_from_the_code(tmp_path):
    rows = {r["file"]: r for r in cuda_l2_census.census(folder(tmp_path))}
    assert (rows["1024_1024_1024.cu"]["mma_acc"], rows["1024_1024_1024.cu"]["device_syncs"]) == ("fp16", 1)
    assert (rows["4096_4096_4096.cu"]["mma_acc"], rows["4096_4096_4096.cu"]["device_syncs"]) == ("fp32", 0)
    assert rows["64_64_64.cu"]["device_syncs"] == 0 and rows["64_64_64.cu"]["class"] == "small"
    assert "not a CUDA-L2 kernel file" in rows["2048_2048_64.cu"]["error"]


def test_the_pick_takes_each_class_s_share_and_is_the_same_for_the_same_seed(tmp_path):
    rows = cuda_l2_census.census(folder(tmp_path))
    picked = cuda_l2_census.select(rows, 3, seed=0)
    assert [r["class"] for r in picked] == ["small", "medium", "large"]  # sorted by shape
    assert picked == cuda_l2_census.select(rows, 3, seed=0)


def test_the_census_says_which_files_the_wrapper_puts_on_the_callers_stream(tmp_path):
    (tmp_path / "128_128_128.cu").write_text(FUNCTION.format("  k<<<1, 32>>>();"))
    (tmp_path / "256_256_256.cu").write_text(
        FUNCTION.format("  cudaStream_t s; cudaStreamCreate(&s); k<<<1, 32, 0, s>>>();"))
    rows = {r["file"]: r for r in cuda_l2_census.census(tmp_path)}
    assert rows["128_128_128.cu"]["launch"] == "direct" and rows["256_256_256.cu"]["launch"] == "joined"
