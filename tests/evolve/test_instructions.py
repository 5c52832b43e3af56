"""What a kernel computes with, read from its source and shown beside its measurements in prompts: wgmma for
the wgmma family, mma.sync for the mma_sync family, WMMA for the WMMA example, nothing for a plain CUDA-core
kernel; never one label for all."""

from pathlib import Path

from kernelrl.evolve.instructions import uses, uses_line
from kernelrl.space.spec import parse_spec
from tests import train_helpers as h

ROOT = Path(__file__).resolve().parents[2]


def test_each_family_is_named_by_what_it_issues():
    assert uses(parse_spec("wgmma BM=128 BN=128 stages=4").source("fp32"))[0] == "wgmma"
    assert uses(parse_spec("mma_sync BM=128 BN=128 BK=32").source("fp32"))[0] == "mma.sync"
    assert uses((ROOT / "examples" / "hgemm_wmma.cu").read_text()) == ["WMMA"]


def test_a_cuda_core_kernel_claims_no_tensor_cores():
    assert uses(h.KERNEL) == [] and uses_line(h.KERNEL) is None


def test_libraries_are_named_too():
    assert uses("#include <cutlass/gemm/device/gemm.h>\n") == ["CUTLASS"]
    assert uses("import torch\ny = torch.matmul(a, b)\n") == ["torch"]


def test_the_prompt_shows_the_line_beside_the_measurements(tmp_path):
    from kernelrl.evolve.hgemm_target import HgemmTarget
    from kernelrl.evolve.population import Population
    from kernelrl.evolve.prompts import PromptBuilder
    from kernelrl.workloads.hgemm import parse_shapes
    target = HgemmTarget(parse_shapes("64x64x64"), tmp_path / "e.db", ["torch"], runner="dummy")
    pop = Population(tmp_path / "e.db")
    c, _ = pop.add(target.key, (ROOT / "examples" / "hgemm_wmma.cu").read_text(), "llm", 1, island=0)
    c = pop.record(c.id, "ok", None, 1.1, {"torch": 1.1}, {"64x64x64": {"us": 10.0, "baselines": {"torch": 11.0}}})
    user = PromptBuilder(target, "- GPU: test").propose(c, [], [])[1]["content"]
    pop.close()
    assert "- computes with: WMMA (from its source)" in user
