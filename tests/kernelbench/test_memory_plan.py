"""The KernelBench worker's memory plan (kernelrl/kernelbench/memory_plan.py) on the CPU: what each phase holds for a
footprint, which spills and reductions make a task fit, the refusal line, and the smallest card for a list of
tasks."""

import pytest

from kernelrl.kernelbench import memory_plan as mp
from kernelrl.kernelbench.memory_plan import GIB, MIB, Footprint

CARD_80GB = 79 * GIB  # an H100 80 GB's usable memory
FREE_80GB = CARD_80GB - mp.DEVICE_OVERHEAD  # what the worker measures there with a weightless reference loaded
HOST = 128 * GIB


def test_a_small_task_gets_the_full_plan():
    fp = Footprint(64 * MIB, 64 * MIB, temporaries=16 * MIB, draw_extra=80 * MIB, weights=4 * MIB)
    plan = mp.plan(fp, FREE_80GB, HOST)
    assert plan.fits and plan.note() is None and plan.spills() == [] and plan.reductions() == []
    assert plan.keep_baselines and not (plan.prev_ref_on_host or plan.pristine_on_host or plan.pool_on_host)
    assert plan.input_sets == 3 and plan.held_outputs == plan.full_held and plan.skipped_baselines == ()
    assert plan.held_bytes == 2 * fp.total  # Held's budget as before: two footprints
    assert plan == mp.full(fp, FREE_80GB, HOST)


def test_a_12_gib_elementwise_task_fits_an_80_gb_card_with_named_spills():
    # 4096 x 393216 fp32 in and out (level 1's ReLU, GELU, Softmax, ...): the former bound, 8 footprints, was 96 GiB
    fp = Footprint(6 * GIB, 6 * GIB, temporaries=0, draw_extra=7.5 * GIB)
    assert 8 * fp.total > FREE_80GB
    assert not mp.full(fp, FREE_80GB, HOST).fits
    plan = mp.plan(fp, FREE_80GB, HOST)
    assert plan.fits and plan.need <= FREE_80GB
    assert plan.reductions() == []  # no check reduced: copies move to the host instead
    assert plan.prev_ref_on_host and plan.pristine_on_host and not plan.keep_baselines
    note = plan.note()
    assert note.startswith("memory plan (footprint 12.0 GiB") and "GiB free, needs about" in note
    for spill in plan.spills():
        assert spill in note


def test_timed_calls_keep_their_pristine_copy_on_the_device_where_the_timing_phase_has_room():
    # the checks spill pristine copies, but timing holds less: its per-call copy stays on the device (no round trip
    # over the link for each timed call), and the timing phase counts it
    fp = Footprint(6 * GIB, 6 * GIB, temporaries=0, draw_extra=7.5 * GIB)
    plan = mp.plan(fp, FREE_80GB, HOST)
    assert plan.pristine_on_host and not plan.timing_pristine_on_host
    assert mp.margin(plan.phases["timing"]) <= plan.free
    assert "on the device while timing" in plan.note()


def test_timed_calls_spill_their_pristine_copy_where_the_timing_phase_has_no_room():
    # level 1's 2D average pooling: 16 GiB of inputs, a small output
    fp = Footprint(16 * GIB, GIB // 8, temporaries=0, draw_extra=16 * GIB)
    plan = mp.plan(fp, FREE_80GB, HOST)
    assert plan.fits and plan.pristine_on_host and plan.timing_pristine_on_host
    assert mp.margin(plan.phases["timing"] + fp.input_bytes) > plan.free
    assert "on the device while timing" not in plan.note()


def test_a_task_that_needs_a_reduced_check_says_which_and_keeps_the_rest():
    fp = Footprint(8 * GIB, 8 * GIB, draw_extra=10 * GIB)  # level 1's L1/L2 norms
    plan = mp.plan(fp, FREE_80GB, HOST)
    assert plan.fits and plan.reductions()
    assert plan.held_outputs < plan.full_held and plan.held_bytes == plan.held_outputs * fp.output_bytes
    assert f"{plan.held_outputs} candidate output(s) held alive" in plan.note()
    # spills come first: every one that helps is taken before any check is reduced
    assert plan.prev_ref_on_host and plan.pristine_on_host


def test_without_host_memory_nothing_is_spilled_and_checks_are_reduced_instead():
    fp = Footprint(6 * GIB, 6 * GIB, draw_extra=7.5 * GIB)
    plan = mp.plan(fp, FREE_80GB, host_free=0)
    assert plan.fits and plan.host_need == 0
    assert not (plan.prev_ref_on_host or plan.pristine_on_host or plan.pool_on_host)
    assert plan.reductions()


def test_a_task_larger_than_the_card_with_every_reduction_is_refused_with_its_numbers():
    fp = Footprint(30 * GIB, 30 * GIB, temporaries=2 * GIB)
    plan = mp.plan(fp, FREE_80GB, HOST)
    assert not plan.fits
    least = mp.min_device(fp, HOST)
    assert plan.need == least > FREE_80GB
    line = plan.refusal()
    assert line.startswith(f"evaluating it needs about {least / GIB:.1f} GiB of device memory even with every "
                           f"reduction")
    assert f"{FREE_80GB / GIB:.1f} GiB are free" in line and "footprint 60.0 GiB" in line
    assert "\n" not in line


def test_each_spill_and_reduction_lowers_or_keeps_every_phase():
    fp = Footprint(5 * GIB, 3 * GIB, temporaries=GIB, draw_extra=6 * GIB, weights=GIB)
    base = mp.full(fp)
    changes = [dict(keep_baselines=False), dict(prev_ref_on_host=True), dict(pristine_on_host=True),
               dict(pool_on_host=True), dict(held_outputs=1), dict(input_sets=1),
               dict(skipped_baselines=("cuda_graph",))]
    from dataclasses import replace
    for change in changes:
        reduced = mp._made(replace(base, **change))
        assert all(reduced.phases[k] <= base.phases[k] for k in base.phases), change
        assert reduced.need <= base.need


def test_the_plan_counts_only_the_baselines_asked_for():
    fp = Footprint(6 * GIB, 6 * GIB)
    eager_only = mp.full(fp, baselines=("eager",))
    every = mp.full(fp)
    assert every.phases["timing"] - eager_only.phases["timing"] == 2 * (fp.total + fp.temporaries)
    assert mp.plan(fp, FREE_80GB, HOST, baselines=("eager",)).skipped_baselines == ()


def test_held_outputs_are_no_more_than_the_checks_make():
    tiny_output = Footprint(16 * GIB, 4)  # a loss: a scalar output
    assert mp.full_held(tiny_output) == mp.CHECKS
    assert mp.full_held(Footprint(GIB, GIB)) == 4  # two footprints of 1 GiB outputs
    assert mp.full_held(Footprint(GIB, 0)) == 1


@pytest.mark.parametrize("card_gib", [79.0, 60.0])
def test_the_smallest_card_is_the_largest_task_s_least_memory(card_gib):
    tasks = [Footprint(64 * MIB, 64 * MIB), Footprint(6 * GIB, 6 * GIB, draw_extra=7.5 * GIB),
             Footprint(16 * GIB, 128 * MIB, draw_extra=20 * GIB), Footprint(GIB, 8 * GIB, weights=2 * GIB)]
    card, which = mp.smallest_card(tasks, HOST)
    assert which == 2  # the 16 GiB input set
    for fp in tasks:  # every task runs on that card ...
        assert mp.plan(fp, card - mp.DEVICE_OVERHEAD - fp.weights, HOST).fits
    # ... and the task that sets it does not on a card 1 GiB smaller
    assert not mp.plan(tasks[which], card - GIB - mp.DEVICE_OVERHEAD, HOST).fits
    full_card, _ = mp.smallest_card(tasks, HOST, reductions=False)
    assert full_card > card
    fits_all = card <= card_gib * GIB
    assert all(mp.plan(fp, int(card_gib * GIB) - mp.DEVICE_OVERHEAD - fp.weights, HOST).fits
               for fp in tasks) == fits_all


def test_the_refused_plan_on_a_small_card_names_the_least_it_needs():
    fp = Footprint(6 * GIB, 6 * GIB, draw_extra=7.5 * GIB)
    small = mp.plan(fp, 40 * GIB, HOST)
    assert not small.fits and small.need == mp.min_device(fp, HOST) > 40 * GIB


def test_host_available_reads_meminfo():
    assert mp.host_available() >= 0
