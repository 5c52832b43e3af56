"""Shape sets of the paper grid and the shape-spec parser."""

from collections import Counter

import pytest

from kernelrl.workloads.hgemm import PAPER_DIMS, GemmProblem, ShapeError, parse_shapes, size_class


def names(problems):
    return [p.name for p in problems]


# -- the paper grid ------------------------------------------------------------------------------------------

def test_paper_grid_has_1000_unique_shapes():
    grid = parse_shapes("paper")
    assert len(grid) == 1000
    assert len(set(grid)) == 1000
    assert {p.m for p in grid} == {p.n for p in grid} == {p.k for p in grid} == set(PAPER_DIMS)


def test_paper_grid_size_classes_are_304_509_187():
    counts = Counter(p.size_class for p in parse_shapes("paper"))
    assert counts == {"small": 304, "medium": 509, "large": 187}


@pytest.mark.parametrize("flops, expected", [
    (999_999_999, "small"), (1_000_000_000, "medium"), (100_000_000_000, "medium"),
    (100_000_000_001, "large"),
])
def test_size_class_boundaries(flops, expected):
    assert size_class(flops) == expected


@pytest.mark.parametrize("cls, count", [("small", 304), ("medium", 509), ("large", 187)])
def test_named_size_class_sets(cls, count):
    problems = parse_shapes(cls)
    assert len(problems) == count
    assert all(p.size_class == cls for p in problems)


def test_acc_is_applied_to_every_shape():
    assert {p.acc for p in parse_shapes("small", acc="fp16")} == {"fp16"}


# -- sample:N:SEED -------------------------------------------------------------------------------------------

def test_sample_has_n_sorted_shapes_from_the_grid():
    sample = parse_shapes("sample:50:0")
    assert len(sample) == 50 == len(set(sample))
    assert sample == sorted(sample)
    assert set(sample) <= set(parse_shapes("paper"))


def test_sample_is_deterministic_per_seed():
    assert parse_shapes("sample:20:7") == parse_shapes("sample:20:7")


def test_sample_seeds_differ():
    assert parse_shapes("sample:20:1") != parse_shapes("sample:20:2")


def test_sample_accepts_a_negative_seed():
    assert len(parse_shapes("sample:3:-4")) == 3


# -- literal lists, joining, de-duplication ------------------------------------------------------------------

def test_literal_list():
    problems = parse_shapes("4096x4096x4096,64x16384x8192")
    assert [(p.m, p.n, p.k) for p in problems] == [(4096, 4096, 4096), (64, 16384, 8192)]
    assert all(p.acc == "fp32" and p.layout == "nn" for p in problems)


@pytest.mark.parametrize("spec", [" 333 x 200 x 72 ", "333×200×72"])
def test_literal_tolerates_spaces_and_times_sign(spec):
    assert names(parse_shapes(spec)) == ["333x200x72"]


def test_literal_shapes_need_not_be_in_the_grid():
    assert names(parse_shapes("333x200x72")) == ["333x200x72"]


def test_plus_joins_sets_in_order():
    problems = parse_shapes("64x64x64+sample:3:0+5x6x7")
    assert names(problems)[0] == "64x64x64"
    assert names(problems)[-1] == "5x6x7"
    assert len(problems) == 5


def test_repeats_are_dropped_keeping_first_position():
    assert names(parse_shapes("8x8x8,64x64x64,8x8x8")) == ["8x8x8", "64x64x64"]


def test_joined_sets_are_deduplicated():
    # 64x64x64 is a small paper shape, so adding it to `small` adds nothing
    assert len(parse_shapes("small+64x64x64")) == 304
    assert len(parse_shapes("paper+large")) == 1000


# -- bad specs -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("spec, hint", [
    ("12x3", "MxNxK"),
    ("sample:0:1", "between 1 and 1000"),
    ("sample:1001:1", "between 1 and 1000"),
    ("sample:x", "sample:N:SEED"),
    ("sample:5", "sample:N:SEED"),
    ("", "MxNxK"),
    ("   ", "MxNxK"),
    ("0x4x4", "at least 1"),
    ("huge", "paper"),
    ("64x64x64+", "MxNxK"),
])
def test_bad_spec_raises_shape_error_saying_what_to_write(spec, hint):
    with pytest.raises(ShapeError) as info:
        parse_shapes(spec)
    assert hint in str(info.value)


@pytest.mark.parametrize("spec", ["12x3", "sample:0:1", "0x4x4"])
def test_bad_spec_message_names_the_spec(spec):
    with pytest.raises(ShapeError, match=spec):
        parse_shapes(spec)


def test_malformed_sample_seed_raises_shape_error():
    # "--1" passes the `lstrip("-").isdigit()` check but is not an integer; the CLI only reports ShapeError
    with pytest.raises(ShapeError):
        parse_shapes("sample:5:--1")


# -- GemmProblem ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dims", [(0, 4, 4), (4, -1, 4), (4, 4, 0), (4, 4, 2.0)])
def test_problem_rejects_non_positive_or_non_integer_dims(dims):
    with pytest.raises(ShapeError, match="positive integers"):
        GemmProblem(*dims)


def test_problem_rejects_unknown_accumulator():
    with pytest.raises(ShapeError, match="fp32, fp16"):
        GemmProblem(4, 4, 4, acc="bf16")


def test_problem_rejects_other_layouts():
    with pytest.raises(ShapeError, match="nn"):
        GemmProblem(4, 4, 4, layout="tn")


def test_flops_and_min_bytes():
    p = GemmProblem(3, 5, 7)
    assert p.flops == 2 * 3 * 5 * 7
    assert p.min_bytes == 2 * (3 * 7 + 7 * 5 + 3 * 5)


def test_with_acc_keeps_dims():
    p = GemmProblem(3, 5, 7).with_acc("fp16")
    assert (p.m, p.n, p.k, p.acc) == (3, 5, 7, "fp16")
    assert GemmProblem(**p.to_dict()) == p
