"""benchmarks/suites/kb_public.py's --numbers: a level split over device calls, or single tasks measured again."""

import pytest

from benchmarks.suites.kb_public import parse_numbers


def test_a_range_and_single_numbers_make_one_set():
    assert parse_numbers("45,51-52,96") == {45, 51, 52, 96}
    assert parse_numbers("21-24") == {21, 22, 23, 24}


@pytest.mark.parametrize("text", ["", "a-3", "5-2", "1,,2"])
def test_anything_else_is_refused(text):
    with pytest.raises(ValueError):
        parse_numbers(text)
