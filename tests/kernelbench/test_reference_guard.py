"""The reference model instance the worker keeps for a task's pairs (kernelrl/kernelbench/task_guard.py,
ReferenceSnapshot): a forward set on the instance, a swapped class, a submodule or hook added, `training` flipped,
a parameter replaced or written in place (through `.data` too) is seen, named and put back; the model's own
training-mode calls (batch norm's running statistics, dropout) leave nothing to report."""

import torch
import torch.nn as nn

from kernelrl.kernelbench.task_guard import ReferenceSnapshot, TaskSnapshot


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.bn = nn.BatchNorm1d(8)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        return self.drop(self.bn(self.fc(x)))


def fresh():
    torch.manual_seed(0)
    model = Net()
    return model, ReferenceSnapshot(model)


def test_the_models_own_training_mode_calls_change_nothing():
    model, snap = fresh()
    for _ in range(3):
        model(torch.randn(4, 8))
    assert snap.changed() == [] and snap.values_changed() == []


def test_a_forward_set_on_the_instance_is_seen_and_removed():
    model, snap = fresh()
    honest = model.forward
    model.forward = lambda x: honest(x) * 0
    assert snap.changed() == ["the reference model: forward set on the instance"]
    assert "forward" not in vars(model) and snap.changed() == []


def test_a_swapped_class_is_seen_and_put_back():
    model, snap = fresh()

    class Slow(Net):
        pass

    model.__class__ = Slow
    assert snap.changed() == ["the reference model: its class replaced"]
    assert type(model) is Net


def test_a_replaced_submodule_is_seen_and_put_back():
    model, snap = fresh()
    fc = model.fc
    model.fc = nn.Linear(8, 8)
    assert "the reference model: its _modules changed" in snap.changed()
    assert model.fc is fc


def test_a_hook_added_to_a_submodule_is_seen_and_removed():
    model, snap = fresh()
    model.bn.register_forward_hook(lambda m, i, o: o * 0)
    assert snap.changed() == ["the reference model.bn: its _forward_hooks changed"]
    assert len(model.bn._forward_hooks) == 0


def test_training_flipped_is_seen_and_put_back():
    model, snap = fresh()
    model.eval()
    found = snap.changed()
    assert "the reference model: training changed" in found and "the reference model.bn: training changed" in found
    assert model.training and model.bn.training


def test_a_parameter_written_in_place_is_seen():
    model, snap = fresh()
    with torch.no_grad():
        model.fc.weight.mul_(0)
    assert snap.changed() == ["the reference model's fc.weight changed (written in place)"]


def test_values_written_through_data_are_seen_and_put_back():
    """`.data` has a version counter of its own: only the values tell."""
    model, snap = fresh()
    saved = model.fc.weight.detach().clone()
    model.fc.weight.data.zero_()
    assert snap.changed() == []
    assert snap.values_changed() == ["the reference model's fc.weight: its values changed"]
    assert torch.equal(model.fc.weight.detach(), saved)


def test_the_task_snapshot_names_the_reference_and_its_verdict_detail():
    import types
    module = types.ModuleType("task_module")
    model = Net()
    snap = TaskSnapshot(module, model)
    model.fc.bias.data.fill_(3.0)
    detail = snap.reference_values("during load")
    assert detail is not None and detail.startswith("the reference model's fc.bias: its values changed during load")
    assert snap.reference_values("by the pair's end") is None  # put back


def test_buffers_of_a_module_in_eval_mode_are_compared_by_value():
    """Batch norm in eval mode computes with its running statistics and updates none of them."""
    torch.manual_seed(0)
    model = Net().eval()
    snap = ReferenceSnapshot(model)
    model(torch.randn(4, 8))
    assert snap.values_changed() == []
    model.bn.running_var.data.fill_(1e6)
    assert snap.values_changed() == ["the reference model's bn.running_var: its values changed"]


def test_a_parameter_given_another_class_is_seen_and_put_back():
    """A Parameter subclass whose __torch_function__ runs every operation many times slows the reference (a
    helper's review, 2026-12-07: accepted at 11.6x, and the honest pair after it in the same worker read 11.5x)."""
    model, snap = fresh()

    class Slow(nn.Parameter):
        pass

    model.fc.weight.__class__ = Slow
    assert snap.changed() == ["the reference model's fc.weight: its class replaced"]
    assert type(model.fc.weight) is nn.Parameter
