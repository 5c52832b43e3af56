"""Library code is known by what its files compile to, not by the file name a code object carries."""

import _imp
import marshal
import codecs
import importlib._bootstrap
import json.decoder
import typing

from kernelrl.harness.installed import library_prefixes
from kernelrl.kernelbench.code_origin import CodeOrigins, code_names, harness_root
from kernelrl.kernelbench import judge


def origins():
    return CodeOrigins(library_prefixes() + (harness_root(),))


def test_a_library_function_is_trusted():
    assert origins().trusted(json.decoder.JSONDecoder.decode.__code__)


def test_a_nested_library_function_is_trusted():
    assert origins().trusted(typing._caller.__code__)


def test_frozen_modules_are_trusted_by_their_frozen_code():
    assert origins().trusted(importlib._bootstrap._find_and_load.__code__)
    assert origins().trusted(codecs.open.__code__)


def test_the_harness_is_trusted():
    assert origins().trusted(judge.JudgeMixin._judge_values.__code__)


def test_code_compiled_under_a_library_file_name_is_not():
    names = {}
    exec(compile("def decode(self, s):\n    return s\n", json.decoder.__file__, "exec"), names)
    assert names["decode"].__code__.co_filename == json.decoder.__file__
    assert not origins().trusted(names["decode"].__code__)


def test_code_compiled_under_a_frozen_name_is_not():
    names = {}
    exec(compile("def f():\n    return 1\n", "<frozen importlib._bootstrap>", "exec"), names)
    assert not origins().trusted(names["f"].__code__)


def test_library_code_with_other_constants_is_not():
    code = json.decoder.JSONDecoder.decode.__code__
    assert not origins().trusted(code.replace(co_consts=code.co_consts + ("extra",)))


def test_a_file_name_fixed_after_compiling_is_not_trusted():
    code = compile("def f():\n    return 1\n", "candidate.py", "exec")
    _imp._fix_co_filename(code, json.decoder.__file__)
    assert code.co_filename == json.decoder.__file__
    assert not origins().trusted(code)


def test_own_code_is_not_trusted():
    def own():
        return 1
    assert not origins().trusted(own.__code__)


def test_the_name_alone_is_what_named_trusted_says():
    names = {}
    exec(compile("def f():\n    return 1\n", json.decoder.__file__, "exec"), names)
    o = origins()
    assert o.named_trusted(json.decoder.__file__) and not o.trusted(names["f"].__code__)
    assert not o.named_trusted(__file__)


def test_code_names_reads_every_file_name_in_marshalled_code():
    outer = compile("def f():\n    return 1\n", "made.py", "exec")
    assert code_names(marshal.dumps(outer)) == {"made.py"}


def test_code_names_of_data_without_code_is_empty():
    assert code_names(marshal.dumps((1, "a"))) == set() and code_names(b"\x00garbage") == set()
