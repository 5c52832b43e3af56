"""The hardware the prompt describes: known cards by their nvidia-smi name, Hopper limits when unknown."""

import pytest

from kernelrl.evolve.hardware import detect


@pytest.mark.parametrize("name, sms", [("NVIDIA H200", 132), ("NVIDIA H100 80GB HBM3", 132), ("NVIDIA H100 PCIe", 114),
                                       ("NVIDIA H20", 78), ("NVIDIA GH200 480GB", 132), ("NVIDIA A100-SXM4-80GB", 108)])
def test_known_cards_get_their_own_sm_count(name, sms):
    hw = detect(name)
    assert hw.limits["sms"] == sms and not hw.assumed


def test_without_a_gpu_hopper_limits_are_assumed_and_said_so():
    hw = detect("")
    assert hw.assumed and hw.limits["sms"] == 132 and "assumed" in hw.describe()


def test_the_description_names_sms_and_shared_memory():
    text = detect("NVIDIA H200").describe()
    assert "132 SMs" in text and "227 KiB per block" in text and "sm_90a" in text
