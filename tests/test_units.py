"""Sizes people type, and durations, sizes and rates people read."""

from __future__ import annotations

import pytest

from autoplace.errors import BadInputError
from autoplace.units import (
    count,
    parse_ints,
    parse_list,
    parse_size,
    percent,
    rate,
    seconds,
    size,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("8GiB", 8 * 2**30),
        ("8gib", 8 * 2**30),
        ("8 GiB", 8 * 2**30),
        ("8Gi", 8 * 2**30),
        ("512MiB", 512 * 2**20),
        ("1KiB", 1024),
        ("2TiB", 2 * 2**40),
        ("8GB", 8 * 10**9),
        ("8G", 8 * 10**9),
        ("3k", 3000),
        ("4000000000", 4_000_000_000),
        ("100b", 100),
        ("1", 1),
        (" 12 MB ", 12 * 10**6),
        ("1.5GiB", 3 * 2**29),
        ("0.5KiB", 512),
    ],
)
def test_parse_size(text: str, expected: int) -> None:
    assert parse_size(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [("8.2MB", 8_200_000), ("8.2GB", 8_200_000_000), ("1.1KB", 1100), ("2.3MB", 2_300_000)],
)
def test_parse_size_decimal_fractions_are_exact(text: str, expected: int) -> None:
    # 8.2 * 10**6 is 8199999.999999999 in binary floating point: it must not truncate.
    assert parse_size(text) == expected


@pytest.mark.parametrize(
    "text", ["abc", "", "GiB", "1e3", "-5", "-5MiB", "8XB", "8 GiB extra", "8ib", "8i", "1,000"]
)
def test_parse_size_rejects_unreadable_sizes(text: str) -> None:
    with pytest.raises(BadInputError, match="cannot read size"):
        parse_size(text)


@pytest.mark.parametrize("text", ["0", "0GiB", "0.0", "0.1"])
def test_parse_size_rejects_sizes_below_one_byte(text: str) -> None:
    with pytest.raises(BadInputError, match="positive"):
        parse_size(text)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "-"),
        (2.5, "2.5 s"),
        (1.0, "1 s"),
        (12.345, "12.3 s"),
        (1234.5, "1234 s"),
        (0.0123, "12.3 ms"),
        (1e-3, "1 ms"),
        (4.5e-5, "45 µs"),
        (0.0, "0 µs"),
    ],
)
def test_seconds(value: float | None, text: str) -> None:
    assert seconds(value) == text


@pytest.mark.parametrize("value", [999.7, 0.9997, 0.0009997, 9.9996e-4])
def test_seconds_never_switches_to_exponent_notation(value: float) -> None:
    # Three significant figures of 999.7 round to 1000, which "%.3g" writes as 1e+03.
    text = seconds(value)
    assert "e+" not in text and "e-" not in text, text


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "-"),
        (0, "0 B"),
        (1023, "1023 B"),
        (1024, "1.0 KiB"),
        (1536, "1.5 KiB"),
        (5 * 2**20, "5.0 MiB"),
        (3 * 2**30, "3.0 GiB"),
        (2**40, "1024.0 GiB"),
        (-11040101, "-10.5 MiB"),  # a fitted line's intercept, never "-11040101 B"
    ],
)
def test_size(value: int | None, text: str) -> None:
    assert size(value) == text


@pytest.mark.parametrize(
    ("value", "unit", "text"),
    [
        (None, "", "-"),
        (12.0, "", "12.0"),
        (1500.0, "", "1.50 k"),
        (2.5e6, "", "2.50 M"),
        (3e9, "FLOP/s", "3.00 GFLOP/s"),
        (4e12, "FLOP/s", "4.00 TFLOP/s"),
        (5.0, "FLOP/s", "5.0 FLOP/s"),
    ],
)
def test_rate(value: float | None, unit: str, text: str) -> None:
    assert rate(value, unit) == text


@pytest.mark.parametrize(
    ("value", "text"),
    [(None, "-"), (0.0, "0.0%"), (0.05, "5.0%"), (0.1234, "12.3%"), (1, "100.0%")],
)
def test_percent(value: float | None, text: str) -> None:
    assert percent(value) == text


@pytest.mark.parametrize(
    ("value", "text"),
    [(None, "-"), (3, "3"), (2489.2, "2,490"), (2.49e6, "2.49 M"), (1.2e4, "12.00 k")],
)
def test_count_is_whole_or_a_rate_never_an_exponent(value: float | None, text: str) -> None:
    assert count(value) == text


def test_parse_size_round_trips_through_size() -> None:
    assert size(parse_size("512MiB")) == "512.0 MiB"
    assert size(parse_size("8GiB")) == "8.0 GiB"


def test_a_range_runs_between_powers_of_two_and_a_list_may_be_anything() -> None:
    assert parse_ints("4..64", "batch sizes") == [4, 8, 16, 32, 64]
    assert parse_ints("1..1", "batch sizes") == [1]
    assert parse_ints("3,10,100", "batch sizes") == [3, 10, 100]
    with pytest.raises(BadInputError, match=r"'3\.\.100'.*nearest inside it: 4\.\.64"):
        parse_ints("3..100", "batch sizes")
    with pytest.raises(BadInputError, match="empty widths"):
        parse_ints(" ,", "widths")


def test_an_empty_list_is_refused_not_taken_for_the_default() -> None:
    with pytest.raises(BadInputError, match="empty --precisions ''"):
        parse_list("", "--precisions")
