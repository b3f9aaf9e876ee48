"""Parsing and validating one point of the search space."""

from __future__ import annotations

import dataclasses

import pytest

from autoplace import PRECISIONS, AutoplaceError, BadInputError, Config
from autoplace.config import check_batch_size, config_at, parse_device, parse_precision
from autoplace.errors import ConfigFileError, ModelFileError, StorageError, WorkerError


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("float32", "float32"),
        ("fp32", "float32"),
        ("f32", "float32"),
        ("bfloat16", "bfloat16"),
        ("bf16", "bfloat16"),
        ("BF16", "bfloat16"),
        ("  bf16 ", "bfloat16"),
        ("float16", "float16"),
        ("fp16", "float16"),
        ("f16", "float16"),
        ("half", "float16"),
        ("Float16", "float16"),
    ],
)
def test_parse_precision_aliases(text: str, expected: str) -> None:
    assert parse_precision(text) == expected


@pytest.mark.parametrize("text", ["float64", "int8", "fp8", "", "bf 16", "float"])
def test_parse_precision_rejects_unknown_and_lists_the_known(text: str) -> None:
    with pytest.raises(BadInputError, match="unknown precision") as info:
        parse_precision(text)
    for name in PRECISIONS:
        assert name in str(info.value)


def test_precisions_are_the_canonical_names() -> None:
    assert PRECISIONS == ("float32", "bfloat16", "float16")
    assert all(parse_precision(p) == p for p in PRECISIONS)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("cpu", "cpu:0"),
        ("CPU", "cpu:0"),
        (" cpu:3 ", "cpu:3"),
        ("cpu:0", "cpu:0"),
        ("gpu", "gpu:0"),
        ("gpu:2", "gpu:2"),
        ("cuda", "gpu:0"),
        ("cuda:1", "gpu:1"),
        ("CUDA:1", "gpu:1"),
        ("rocm:0", "gpu:0"),
        ("gpu:01", "gpu:1"),
        ("tpu:7", "tpu:7"),
    ],
)
def test_parse_device_canonicalises(text: str, expected: str) -> None:
    assert parse_device(text) == expected


@pytest.mark.parametrize(
    "text", ["", "cpu:", ":0", "cpu:-1", "cpu:1:2", "cpu 0", "gpu0x", "cpu:a", "c-pu", "cpu,gpu"]
)
def test_parse_device_rejects_bad_syntax(text: str) -> None:
    with pytest.raises(BadInputError, match="bad device"):
        parse_device(text)


def test_config_canonicalises_its_fields() -> None:
    c = Config(device="cuda:1", batch_size=32, precision="bf16", width=64)
    assert (c.device, c.batch_size, c.precision, c.width) == ("gpu:1", 32, "bfloat16", 64)
    assert Config(device="cpu", batch_size=1).precision == "float32"
    assert Config(device="cpu", batch_size=1).width is None


def test_equal_spellings_make_equal_configs() -> None:
    a = Config(device="cpu", batch_size=8, precision="fp16")
    b = Config(device="cpu:0", batch_size=8, precision="float16")
    assert a == b
    assert hash(a) == hash(b)


def test_config_is_frozen() -> None:
    c = Config(device="cpu", batch_size=8)
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.batch_size = 16  # type: ignore[misc]


@pytest.mark.parametrize("batch_size", [0, -1, -3, True, False, 1.5, 8.0, "8", None])
def test_config_rejects_bad_batch_sizes(batch_size: object) -> None:
    with pytest.raises(BadInputError, match="batch size"):
        Config(device="cpu", batch_size=batch_size)  # type: ignore[arg-type]


@pytest.mark.parametrize("batch_size", [1, 2, 4096])
def test_check_batch_size_accepts_positive_ints(batch_size: int) -> None:
    assert check_batch_size(batch_size) == batch_size


@pytest.mark.parametrize("width", [0, -5, True, 2.5, "64"])
def test_config_rejects_bad_widths(width: object) -> None:
    with pytest.raises(BadInputError, match="width"):
        Config(device="cpu", batch_size=8, width=width)  # type: ignore[arg-type]


def test_config_rejects_bad_device_and_precision() -> None:
    with pytest.raises(BadInputError, match="bad device"):
        Config(device="cpu:x", batch_size=8)
    with pytest.raises(BadInputError, match="unknown precision"):
        Config(device="cpu", batch_size=8, precision="int4")


def test_label() -> None:
    assert Config(device="cpu", batch_size=8).label() == "cpu:0 batch=8 float32"
    assert (
        Config(device="gpu:1", batch_size=2, precision="bf16", width=128).label()
        == "gpu:1 batch=2 bfloat16 width=128"
    )


def test_bad_input_exits_with_code_2_and_other_errors_with_1() -> None:
    assert BadInputError("x").exit_code == 2
    for cls in (ModelFileError, ConfigFileError, StorageError):
        assert issubclass(cls, BadInputError)
        assert cls("x").exit_code == 2
    assert WorkerError("x").exit_code == 1
    assert AutoplaceError("x").exit_code == 1
    assert not issubclass(WorkerError, BadInputError)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("gpu:0-3", "gpu:0-3"), ("cuda:2-3", "gpu:2-3"), ("cpu:1-1", "cpu:1"), ("CPU:0-7", "cpu:0-7")],
)
def test_several_devices_are_named_by_their_first_and_last(text: str, expected: str) -> None:
    assert parse_device(text) == expected


@pytest.mark.parametrize("text", ["gpu:3-1", "gpu:0-", "gpu-3", "gpu:0-a"])
def test_a_bad_group_says_how_to_write_one(text: str) -> None:
    with pytest.raises(BadInputError, match=r"PLATFORM:FIRST-LAST, e\.g\. cpu, gpu:0, gpu:0-3"):
        parse_device(text)


def test_several_devices_split_the_global_batch() -> None:
    c = Config("gpu:0-3", 512, "bf16")
    assert (c.device_count, c.per_device_batch, c.arm) == (4, 128, ("gpu:0-3", "bfloat16", None))
    assert c.label() == "gpu:0-3 batch=512 (128 a device) bfloat16"
    assert Config("gpu:0", 512).device_count == 1 and Config("gpu:0", 512).per_device_batch == 512
    assert config_at(("gpu:0-3", "float32", 8), 32) == Config("gpu:0-3", 128, "float32", 8)
    with pytest.raises(BadInputError, match="batch size 6 does not split across the 4 devices"):
        Config("gpu:0-3", 6)
