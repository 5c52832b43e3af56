"""A guarded function rewritten in place (its identity kept) is a change the guards see and put back."""

import types

from kernelrl.harness.guards import Snapshot

HOLDER = types.SimpleNamespace()


def _original(x, scale=2):
    return x * scale


def _other(x, scale=2):
    return 0


def _fresh():
    function = types.FunctionType(_original.__code__, _original.__globals__, "judge", _original.__defaults__)
    HOLDER.judge = function
    return function, Snapshot([(HOLDER, "judge", function, "holder.judge", "harness patch")])


def test_rewritten_code_is_seen_and_put_back():
    function, snapshot = _fresh()
    function.__code__ = _other.__code__
    assert snapshot.changed() == [("harness patch", "holder.judge (its code, defaults or closure rewritten in place)")]
    assert function(3) == 6


def test_rewritten_defaults_are_seen():
    function, snapshot = _fresh()
    function.__defaults__ = (0,)
    assert len(snapshot.rewritten()) == 1 and function(3) == 6


def test_keyword_defaults_are_seen():
    function, snapshot = _fresh()
    function.__kwdefaults__ = {"extra": print}
    assert len(snapshot.rewritten()) == 1 and function.__kwdefaults__ is None


def test_a_callable_in_the_closure_replaced_is_seen():
    def outer():
        inner = abs

        def wrapper(x):
            return inner(x)
        return wrapper
    wrapper = outer()
    HOLDER.wrapper = wrapper
    snapshot = Snapshot([(HOLDER, "wrapper", wrapper, "holder.wrapper", "harness patch")])
    wrapper.__closure__[0].cell_contents = lambda x: 0
    assert len(snapshot.rewritten()) == 1 and wrapper(-3) == 3


def test_a_closure_s_own_data_may_change():
    def outer():
        count = 0

        def counter():
            nonlocal count
            count += 1
            return count
        return counter
    counter = outer()
    HOLDER.counter = counter
    snapshot = Snapshot([(HOLDER, "counter", counter, "holder.counter", "harness patch")])
    counter()
    assert snapshot.changed() == []


def test_an_untouched_function_is_not_reported():
    _, snapshot = _fresh()
    assert snapshot.changed() == []
