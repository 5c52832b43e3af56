"""The static screen of HGEMM candidates (known cheats, the file contract) and the dummy path's lexical check."""

from pathlib import Path

import pytest

from kernelrl.evolve.lexcheck import lexical_errors
from kernelrl.evolve.screen import contract_hgemm, screen_hgemm
from tests.evolve_fake_server import BROKEN, CHEAT, GOOD

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CALL = "int kernelrl_hgemm(const __half* A, const __half* B, __half* C, int M, int N, int K, void* w, size_t b, " \
       "cudaStream_t stream) {\n"


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.cu")), ids=lambda p: p.name)
def test_honest_examples_pass(path):
    assert screen_hgemm(path.read_text()) is None


@pytest.mark.parametrize("body, rule", [
    ("cudaStream_t s; cudaStreamCreate(&s);", "cuda-stream"),
    ("std::thread t([]{}); t.detach();", "threads"),
    ("cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, 0, B, 0, N, A, 0, K, 0, C, 0, N, 0, 0);", "library-call"),
    ("at::matmul_out(c, a, b);", "library-call"),
    ('void* h = dlopen("libcublas.so", 1);', "runtime-loading"),
    ("attr.accessPolicyWindow.num_bytes = 1 << 20;", "persisting-l2"),
    ("k<<<1, 1, 0, cudaStreamPerThread>>>();", "default-stream"),
])
def test_known_cheats_are_rejected_with_their_rule(body, rule):
    verdict = screen_hgemm(f'extern "C" {{\n{CALL}    {body}\n    return 0;\n}}\n}}\n')
    assert verdict is not None and str(verdict).startswith(f"static screen: {rule} (line 3")
    assert verdict.verdict.value == "static screen" and verdict.detail.startswith(f"{rule} (line 3")


def test_the_side_stream_cheat_is_rejected():
    assert "cuda-stream" in str(screen_hgemm(CHEAT))


def test_comments_and_strings_are_not_code():
    text = f'// unlike cublasGemmEx, we tile\nconst char* info = "{{\\"family\\": \\"cublas-like\\"}}";\n{GOOD}'
    assert screen_hgemm(text) is None


def test_a_file_without_the_entry_point_breaks_the_contract():
    broken = contract_hgemm("__global__ void k() {}\n")
    assert str(broken) == "contract: the file defines no kernelrl_hgemm(...) entry point"
    assert broken.verdict.value == "contract"


def test_the_reference_kernel_meets_the_contract():
    assert contract_hgemm(GOOD) is None


def test_the_entry_point_needs_c_linkage():
    assert "C linkage" in str(contract_hgemm(CALL + "return 0; }\n"))


def test_the_reference_kernel_is_lexically_sound():
    assert lexical_errors(GOOD) == []


def test_an_unclosed_brace_is_reported_where_it_opened():
    errors = lexical_errors(BROKEN, "k.cu")
    line = GOOD[:GOOD.index('extern "C" {')].count("\n") + 1
    assert errors == [f"k.cu({line}): error: '{{' is never closed (expected a '}}')"]


def test_an_unterminated_comment_is_reported():
    assert lexical_errors("int a;\n/* no end\n") == ["candidate.cu(2): error: unterminated comment"]


def test_a_stray_closing_bracket_is_reported():
    assert lexical_errors("int f() { return (1)); }\n") == ["candidate.cu(1): error: unexpected ')'"]
