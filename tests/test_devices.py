"""Devices by name: several used together, the counts a search tries, and bad names."""

import pytest

from autoplace import BadInputError, DeviceInfo
from autoplace.devices import check_device, device_choices, device_counts, device_names


def gpus(n: int) -> list[DeviceInfo]:
    return [DeviceInfo(f"gpu:{i}", "gpu", "H200") for i in range(n)]


@pytest.mark.parametrize(
    ("n", "counts"),
    [(1, [1]), (2, [1, 2]), (4, [1, 2, 4]), (6, [1, 2, 4, 6]), (8, [1, 2, 4, 8])],
)
def test_a_search_tries_powers_of_two_and_every_device(n, counts):
    assert device_counts(n) == counts


def test_each_kind_is_tried_alone_and_in_groups_of_its_own():
    cpu = DeviceInfo("cpu:0", "cpu", "cpu")
    assert device_choices([*gpus(8), cpu]) == ["gpu:0", "gpu:0-1", "gpu:0-3", "gpu:0-7", "cpu:0"]
    assert device_choices([cpu]) == ["cpu:0"]  # one device: nothing changes
    mixed = [*gpus(2), DeviceInfo("gpu:2", "gpu", "A100")]
    assert device_choices(mixed) == ["gpu:0", "gpu:0-1", "gpu:2"]  # kinds are not mixed


def test_a_group_names_each_of_its_devices():
    assert device_names("gpu:0-3") == ["gpu:0", "gpu:1", "gpu:2", "gpu:3"]
    assert device_names("cpu:0") == ["cpu:0"]


def test_a_group_past_the_machines_devices_is_bad_input_naming_the_missing_one():
    check_device(gpus(4), "gpu:0-3")
    with pytest.raises(BadInputError, match=r"unknown device 'gpu:4': this machine has gpu:0"):
        check_device(gpus(4), "gpu:0-7")
    one = [DeviceInfo("cpu:0", "cpu", "cpu")]
    with pytest.raises(BadInputError, match="JAX_NUM_CPU_DEVICES=N"):
        check_device(one, "cpu:0-1")
