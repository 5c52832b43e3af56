"""Parsing nvcc's `-Xptxas -v` resource report."""

import pytest

from kernelrl.build.ptxas import parse_ptxas, summarize

GEMM = "_Z11hgemm_wgmmaILi128ELi256EEvPK6__halfS2_PS0_iii"
EPILOGUE = "_Z8epiloguePK6__halfPS_i"
SPLITK = "_Z12splitk_reducePKfP6__halfiii"
HELPER = "_Z6helperPfi"

# nvcc 13 format: entries, their function properties, device functions (no registers) in between.
LOG = f"""\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '{GEMM}' for 'sm_90a'
ptxas info    : Function properties for {GEMM}
    0 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads
ptxas info    : Used 128 registers, used 1 barriers, 37888 bytes smem, 400 bytes cmem[0]
ptxas info    : Compile time = 231.402 ms
ptxas info    : Function properties for {HELPER}
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Compiling entry function '{EPILOGUE}' for 'sm_90a'
ptxas info    : Function properties for {EPILOGUE}
    256 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 20 registers, used 0 barriers, 256 bytes cumulative stack size, 380 bytes cmem[0]
ptxas info    : Compile time = 7.051 ms
ptxas info    : Compiling entry function '{SPLITK}' for 'sm_90a'
ptxas info    : Function properties for {SPLITK}
    16 bytes stack frame, 24 bytes spill stores, 32 bytes spill loads
ptxas info    : Used 255 registers, used 1 barriers, 1024 bytes smem, 384 bytes cmem[0]
ptxas info    : Compile time = 12.5 ms
ptxas info    : Function properties for {HELPER}
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
"""


@pytest.fixture(scope="module")
def kernels():
    return parse_ptxas(LOG)


def test_every_entry_is_found_and_device_functions_are_not(kernels):
    assert set(kernels) == {GEMM, EPILOGUE, SPLITK}


@pytest.mark.parametrize("name, registers, smem", [(GEMM, 128, 37888), (EPILOGUE, 20, None), (SPLITK, 255, 1024)])
def test_registers_and_smem(kernels, name, registers, smem):
    assert kernels[name]["registers"] == registers
    assert kernels[name].get("smem_bytes") == smem


@pytest.mark.parametrize("name, stack, stores, loads", [(GEMM, 0, 8, 8), (EPILOGUE, 256, 0, 0), (SPLITK, 16, 24, 32)])
def test_stack_and_spills(kernels, name, stack, stores, loads):
    k = kernels[name]
    assert (k["stack_bytes"], k["spill_stores"], k["spill_loads"]) == (stack, stores, loads)


def test_arch_is_recorded(kernels):
    assert {k["arch"] for k in kernels.values()} == {"sm_90a"}


def test_log_without_ptxas_lines_gives_nothing():
    assert parse_ptxas("nvcc warning : something unrelated\n") == {}


def test_summarize_takes_the_worst_case(kernels):
    assert summarize(kernels) == {"kernels": 3, "registers": 255, "smem_bytes": 37888,
                                  "spill_bytes": 8 + 8 + 24 + 32, "stack_bytes": 256}


def test_summarize_of_nothing_is_empty():
    assert summarize({}) == {}
