"""The worker's guard over the evaluator's own modules (kernelrl.kernelbench.watch.evaluator_guards): what the judge
looks up at call time is guarded, the state the evaluator itself rebinds is not (a guard there would blame an honest
candidate for the harness's own lazy set-up)."""

import kernelrl.harness.compare
import kernelrl.kernelbench.worker_process  # noqa: F401 - every module a KernelBench worker loads
import kernelrl.library.native  # noqa: F401 - loaded, as in a worker that built the library's fast path
import kernelrl.library.runtime  # noqa: F401
from kernelrl.harness.guards import evaluator_guards
from kernelrl.kernelbench.watch import HARNESS_MODULES


def labels(**kw):
    return {label for *_, label in evaluator_guards(**kw)}


def test_the_comparison_functions_and_harness_classes_methods_are_guarded():
    found = labels()
    assert {"kernelrl.harness.compare.closeness", "kernelrl.harness.compare.nonfinite_mismatches",
            "kernelrl.harness.tolerance.HALF_TOLERANCE", "kernelrl.harness.tolerance.passes"} <= found
    assert "kernelrl.harness.device_state.DeviceState.restore" in found  # a class's method


def test_globals_the_evaluator_rebinds_itself_are_not_guarded():
    found = labels()
    assert not {"kernelrl.library.runtime._default", "kernelrl.library.native._module",
                "kernelrl.library.native._failed"} & found  # each set by a `global` statement in its module


def test_modules_guarded_whole_elsewhere_keep_only_their_classes_here():
    found = labels(skip=HARNESS_MODULES)
    assert "kernelrl.kernelbench.judge.JudgeMixin" not in found
    assert any(label.startswith("kernelrl.kernelbench.judge.JudgeMixin.") for label in found)


def test_a_replaced_function_is_seen():
    guards = [g for g in evaluator_guards() if g[3] == "kernelrl.harness.compare.closeness"]
    (owner, name, original, _), = guards
    real = kernelrl.harness.compare.closeness
    kernelrl.harness.compare.closeness = lambda *args, **kwargs: (0.0, 0.0, 0.0)
    try:
        assert getattr(owner, name) is not original
    finally:
        kernelrl.harness.compare.closeness = real
