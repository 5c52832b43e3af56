"""Code extraction from model replies: the last block in the target's language, and a one-line verdict for each
way a reply goes wrong."""

from kernelrl.evolve.extract import extract

KERNEL = 'extern "C" int kernelrl_hgemm(const __half* A) { return 0; }\n'


def test_the_last_cuda_block_is_taken():
    reply = f"First try:\n```cuda\n// old\n{KERNEL}```\nBetter:\n```cuda\n// new\n{KERNEL}```\n"
    ex = extract(reply)
    assert ex.ok and ex.code.startswith("// new")


def test_the_analysis_before_the_code_is_kept():
    ex = extract(f"The fast one uses cp.async.\n\n```cu\n{KERNEL}```")
    assert ex.analysis == "The fast one uses cp.async."


def test_blocks_in_other_languages_are_ignored():
    ex = extract(f"```cuda\n{KERNEL}```\nbuild it with:\n```bash\nnvcc -O3 k.cu\n```\n")
    assert ex.ok and "kernelrl_hgemm" in ex.code


def test_an_unlabelled_block_with_the_entry_point_is_accepted():
    assert extract(f"```\n{KERNEL}```").ok


def test_no_code_is_a_malformed_verdict():
    ex = extract("I would tile by 128x128 and pipeline the loads.")
    assert not ex.ok and ex.verdict == "malformed: no fenced ```cuda block in the reply"


def test_an_empty_reply_is_a_malformed_verdict():
    assert extract("").verdict == "malformed: empty reply"


def test_a_truncated_block_says_it_was_cut_off():
    ex = extract(f"Plan.\n```cuda\n{KERNEL}__global__ void k(", finish_reason="length")
    assert not ex.ok and "not closed" in ex.verdict and "max_tokens" in ex.verdict


def test_code_split_over_files_is_a_verdict():
    reply = f'**tiles.cuh**\n```cuda\n#pragma once\n```\n**kernel.cu**\n```cuda\n#include "tiles.cuh"\n{KERNEL}```'
    ex = extract(reply)
    assert not ex.ok and "tiles.cuh" in ex.verdict and "one self-contained file" in ex.verdict


def test_a_last_block_without_the_entry_after_one_with_it_is_several_files():
    ex = extract(f"```cuda\n{KERNEL}```\n```cuda\n__device__ int helper() {{ return 1; }}\n```")
    assert not ex.ok and "several files" in ex.verdict


def test_system_headers_are_not_several_files():
    assert extract(f'```cuda\n#include "cuda_fp16.h"\n#include <mma.h>\n{KERNEL}```').ok


def test_reasoning_is_stripped_before_extraction():
    ex = extract(f"<think>maybe ```cuda\nbad\n```</think>\nFinal:\n```cuda\n{KERNEL}```")
    assert ex.ok and ex.code == KERNEL


def test_a_reply_that_ends_inside_its_reasoning_is_a_verdict():
    ex = extract("<think>Let me consider the tile sizes", finish_reason="length")
    assert not ex.ok and "inside its reasoning" in ex.verdict


def test_python_targets_take_the_python_block():
    ex = extract("```python\nclass ModelNew:\n    pass\n```", language="python", entry="ModelNew")
    assert ex.ok and ex.code.startswith("class ModelNew")
