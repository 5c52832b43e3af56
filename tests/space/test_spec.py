"""Kernel specs: the text grammar a policy writes, its verdicts, its canonical text and the tricks it can ask for."""

import pickle

import pytest

from kernelrl.build.builder import BuildRequest, LocalBuilder
from kernelrl.build.toolchain import Toolchain
from kernelrl.harness.verdicts import Category, Verdict
from kernelrl.space import SPACES
from kernelrl.space.base import Variant, over_shared_memory, verdict_of_rejection
from kernelrl.space.spec import SPEC_HEADER, SpecError, SpecRejected, defaults, parse_spec, spec_of, spec_words
from kernelrl.space.tricks import TRICKS


@pytest.mark.parametrize("text, says", [
    ("", "empty"),
    ("cutlass BM=128", "unknown family"),
    ("wgmma BM", "is not knob=value"),
    ("wgmma BM=big", "a whole number"),
    ("wgmma pdl=maybe", "a flag is 0 or 1"),
    ("wgmma dtype=bf16", "the problem's"),
    ("wgmma b_layout=nk", "the problem's"),
    ("wgmma BK=32", "has no knob"),
    ("wgmma BM=128 BM=64", "given twice"),
    ("wgmma trick=teleport", "unknown trick"),
])
def test_a_spec_that_does_not_parse_is_a_bad_spec_with_one_line(text, says):
    with pytest.raises(SpecError) as err:
        parse_spec(text)
    line = str(err.value)
    assert line.startswith("bad spec: ") and says in line and "\n" not in line


def test_bad_spec_is_a_build_category_verdict():
    assert Verdict.BAD_SPEC.category is Category.BUILD


def test_a_value_off_the_family_list_is_unsupported():
    with pytest.raises(SpecRejected) as err:
        parse_spec("wgmma BM=96").source("fp32")
    assert err.value.verdict is Verdict.UNSUPPORTED and "BM=96" in str(err.value)


def test_too_many_stages_is_too_much_shared_memory():
    with pytest.raises(SpecRejected) as err:
        parse_spec("wgmma BM=128 BN=256 stages=12").source("fp32")
    assert err.value.verdict is Verdict.SHARED_MEMORY
    assert str(err.value).startswith("too much shared memory: ")


ONE_WARP = "mma_sync BM=64 BN=64 WM=64 WN=64"  # 1 warp: the family asks 4 or 8, and its source asserts it


def test_a_rule_the_source_asserts_is_left_to_nvcc():
    source = parse_spec(ONE_WARP).source("fp32")
    assert "static_assert(WARPS == 4 || WARPS == 8" in source


def test_the_tuner_still_refuses_what_the_source_asserts():
    variant = parse_spec(ONE_WARP).variant("fp32")
    assert "only 4 or 8 warps" in SPACES["mma_sync"].check(variant)
    assert variant not in set(SPACES["mma_sync"].points("fp32"))


def test_canonical_text_leaves_defaults_out_and_keeps_the_family_order():
    spec = parse_spec("wgmma stages=4 BN=256 BM=128 split_k=1")
    assert spec.text == "wgmma BM=128 BN=256 stages=4"


def test_two_writings_of_one_point_have_one_text():
    a = parse_spec("mma_sync BN=128 BM=128 swizzle=1")
    b = parse_spec("mma_sync BM=128 BN=128")
    assert a.text == b.text


def test_canonical_text_parses_back_to_the_same_point():
    v = next(iter(SPACES["mma_sync"].points("fp32")))
    spec = spec_of(v)
    assert parse_spec(spec.text).variant("fp32") == v


def test_the_first_non_empty_line_is_the_spec():
    assert parse_spec("\n  small BM=64 \nanything after").text == "small BM=64"


def test_a_rendered_source_starts_with_its_spec():
    source = parse_spec("wgmma BM=128 BN=128 stages=4").source("fp32")
    assert source.startswith(f"{SPEC_HEADER}wgmma BM=128 BN=128 stages=4\n")


def test_the_problem_sets_layout_and_dtype():
    spec = parse_spec("wgmma BM=128 BN=128 stages=4")
    assert spec.variant("fp32", layout="nt").p["b_layout"] == "nk"
    assert spec.variant("fp32").p["dtype"] == "fp16"


@pytest.mark.parametrize("trick", TRICKS)
def test_a_trick_renames_the_honest_entry_and_wraps_it(trick):
    source = parse_spec(f"mma_sync BM=128 BN=128 WM=64 WN=64 trick={trick}").source("fp32")
    assert "#define kernelrl_hgemm" in source and "#undef kernelrl_hgemm" in source


def test_fp16_acc_renders_an_fp16_accumulator_that_claims_fp32():
    source = parse_spec("mma_sync BM=128 BN=128 WM=64 WN=64 trick=fp16_acc").source("fp32")
    honest_fp16 = parse_spec("mma_sync BM=128 BN=128 WM=64 WN=64").source("fp16")
    assert honest_fp16.split("\n", 1)[1] in source  # the fp16-accumulating kernel itself
    assert '\\"acc\\":\\"fp32\\"' in source.rsplit("kernelrl_hgemm_info", 1)[1]


def test_vocabulary_holds_every_writable_value():
    words = set(spec_words())
    for family in ("wgmma", "mma_sync", "small"):
        for knob, value in defaults(family).items():
            assert f" {knob}={int(value) if isinstance(value, bool) else value}" in words


@pytest.mark.nvcc
def test_every_trick_compiles_for_sm90a(tmp_path):
    builder = LocalBuilder(Toolchain.discover(arch="sm_90a", with_cutlass=False), cache_dir=tmp_path)
    requests = [BuildRequest(parse_spec(f"small BM=32 BN=64 trick={t}").source("fp32"), name=t) for t in TRICKS]
    for built in builder.build_many(requests):
        assert built.ok, built.log[-2000:]


@pytest.mark.nvcc
def test_a_spec_can_fail_to_compile_and_says_why(tmp_path):
    builder = LocalBuilder(Toolchain.discover(arch="sm_90a", with_cutlass=False), cache_dir=tmp_path)
    built = builder.build(BuildRequest(parse_spec(ONE_WARP).source("fp32"), name="one_warp"))
    assert not built.ok and built.verdict == Verdict.COMPILE_ERROR.value
    assert "4 or 8 warps" in built.error


def test_mma_sync_types_its_shared_memory_rejection():
    # the key comes from the space's typed reason, not from the words in it
    with pytest.raises(SpecRejected) as err:
        parse_spec("mma_sync BM=256 BN=256 BK=64 WM=64 WN=64 stages=4").source("fp32")
    assert err.value.verdict is Verdict.SHARED_MEMORY


def test_cutlass_sm90_types_its_shared_memory_rejection():
    space = SPACES["cutlass_sm90"]
    point = Variant.of("cutlass_sm90", "fp32", **{**defaults("cutlass_sm90"), "tile": "128x128x64", "stages": 12})
    reason = space.check(point)
    assert verdict_of_rejection(reason) is Verdict.SHARED_MEMORY


def test_a_typed_rejection_keeps_its_key_through_pickle():
    reason = over_shared_memory("shared memory 300000 B exceeds 232448 B per block")
    copy = pickle.loads(pickle.dumps(reason))
    assert copy == reason and verdict_of_rejection(copy) is Verdict.SHARED_MEMORY


def test_an_untyped_reason_that_mentions_shared_memory_is_unsupported():
    assert verdict_of_rejection("shared memory layout exceeds what the swizzle allows") is Verdict.UNSUPPORTED
