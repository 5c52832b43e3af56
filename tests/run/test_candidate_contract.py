"""What the evaluator reads from a candidate library before running it (no GPU: the library is plain C)."""

import shutil
import subprocess

import pytest

from kernelrl.harness.verdicts import Rejected, Verdict
from kernelrl.run.methods import Candidate

needs_cc = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")


def library(tmp_path, body: str) -> str:
    src, lib = tmp_path / "cand.c", tmp_path / "cand.so"
    src.write_text("int kernelrl_hgemm(void) { return 0; }\n" + body)
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    return str(lib)


@needs_cc
def test_without_a_layout_b_is_k_by_n(tmp_path):
    cand = Candidate("plain", library(tmp_path, ""))
    assert cand.b_layout == "kn" and not cand.needs_bt


@needs_cc
def test_an_nk_candidate_gets_b_transposed(tmp_path):
    cand = Candidate("nk", library(tmp_path, 'const char* kernelrl_hgemm_b_layout(void) { return "nk"; }\n'))
    assert cand.b_layout == "nk" and cand.needs_bt


@needs_cc
def test_an_unknown_layout_is_a_contract_verdict(tmp_path):
    with pytest.raises(Rejected) as caught:
        Candidate("tn", library(tmp_path, 'const char* kernelrl_hgemm_b_layout(void) { return "tn"; }\n'))
    assert caught.value.verdict is Verdict.CONTRACT and "'tn'" in str(caught.value)
