"""Instants and durations: parsing and formatting at the edges (semantics §1, §10)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from sparktide.errors import SparktideError, TimeFormatError
from sparktide.time import (
    DAY,
    HOUR,
    MILLISECOND,
    MINUTE,
    SECOND,
    format_duration,
    format_instant,
    from_datetime,
    parse_duration,
    parse_instant,
    to_datetime,
)

T0 = 1_772_366_820_000_000  # 2026-03-01T12:07:00Z


# ---------------------------------------------------------------------------- constants


def test_unit_constants_are_integer_microseconds():
    assert (MILLISECOND, SECOND, MINUTE, HOUR, DAY) == (
        1_000,
        1_000_000,
        60_000_000,
        3_600_000_000,
        86_400_000_000,
    )
    for value in (MILLISECOND, SECOND, MINUTE, HOUR, DAY):
        assert type(value) is int


def test_time_format_error_is_a_value_error_and_a_sparktide_error():
    assert issubclass(TimeFormatError, ValueError)
    assert issubclass(TimeFormatError, SparktideError)


# ---------------------------------------------------------------------------- parse_instant


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-03-01T12:07:00Z", T0),
        ("2026-03-01T12:07:00+00:00", T0),
        ("2026-03-01T13:07:00+01:00", T0),
        ("2026-03-01T11:07:00-01:00", T0),
        ("2026-03-01T17:37:00+05:30", T0),
        ("2026-03-02T02:07:00+14:00", T0),
        ("1970-01-01T00:00:00Z", 0),
        ("1970-01-01T01:00:00+01:00", 0),
    ],
)
def test_parse_instant_zones(text, expected):
    value = parse_instant(text)
    assert value == expected
    assert type(value) is int


@pytest.mark.parametrize(
    ("fraction", "micros"),
    [
        (".5", 500_000),
        (".05", 50_000),
        (".123", 123_000),
        (".1234", 123_400),
        (".12345", 123_450),
        (".123456", 123_456),
        (".000001", 1),
        (".999999", 999_999),
        (".000000", 0),
    ],
)
def test_parse_instant_fractions_to_microseconds(fraction, micros):
    value = parse_instant(f"2026-03-01T12:07:00{fraction}Z")
    assert value == T0 + micros
    assert type(value) is int


def test_parse_instant_fraction_with_offset():
    assert parse_instant("2026-03-01T13:07:00.000001+01:00") == T0 + 1


@pytest.mark.parametrize(
    "text",
    [
        "2026-03-01T12:07:00.1234567Z",
        "2026-03-01T12:07:00.123456789Z",
        "2026-03-01T12:07:00.0000001Z",
        "2026-03-01T12:07:00.1234567+01:00",
        # ISO-8601 also allows a comma as the decimal sign: the same rule applies.
        "2026-03-01T12:07:00,1234567Z",
    ],
)
def test_parse_instant_rejects_more_than_microsecond_precision(text):
    with pytest.raises(TimeFormatError):
        parse_instant(text)


@pytest.mark.parametrize(
    "text",
    ["2026-03-01T12:07:00", "2026-03-01T12:07:00.5", "2026-03-01T12:07"],
)
def test_parse_instant_rejects_naive_with_a_message_about_the_zone(text):
    with pytest.raises(TimeFormatError) as info:
        parse_instant(text)
    assert "zone" in str(info.value)


@pytest.mark.parametrize("text", ["2026-03-01", "2026-03", "2026", "20260301"])
def test_parse_instant_rejects_dates_without_time(text):
    with pytest.raises(TimeFormatError):
        parse_instant(text)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "now",
        "yesterday",
        "2026-03-01T",
        "2026-13-01T00:00:00Z",
        "2026-02-30T00:00:00Z",
        "2026-03-01T24:00:00Z",
        "2026-03-01T12:60:00Z",
        "2026-03-01T12:07:00+25:00",
        "12:07:00Z",
        "1772366820",
        "2026-03-01 12:07:00Z",
        "2026-03-01T12:07:00ZZ",
    ],
)
def test_parse_instant_rejects_garbage(text):
    with pytest.raises(TimeFormatError):
        parse_instant(text)


@pytest.mark.parametrize(
    "text",
    [
        "0000-01-01T00:00:00Z",
        "10000-01-01T00:00:00Z",
        "99999-01-01T00:00:00Z",
    ],
)
def test_parse_instant_rejects_out_of_range(text):
    with pytest.raises(TimeFormatError):
        parse_instant(text)


@pytest.mark.parametrize(
    "text",
    [
        "0001-01-01T00:00:00Z",
        "0001-01-01T00:00:00+01:00",
        "0001-01-01T00:30:00+01:00",
        "9999-12-31T23:59:59.999999Z",
        "9999-12-31T23:59:59-01:00",
    ],
)
def test_parse_instant_near_the_range_edges_is_rejected_or_round_trips(text):
    """A time either fails to parse or is an instant that formats back to itself:
    never an instant that later prints as nothing (or as text that cannot be read back)."""
    try:
        value = parse_instant(text)
    except TimeFormatError:
        return
    formatted = format_instant(value)
    assert formatted is not None
    assert parse_instant(formatted) == value


@pytest.mark.parametrize(
    "text",
    [
        "2026-03-01T12:07Z",  # seconds are required
        "2026-03-01t12:07:00Z",
        "2026-03-01T12:07:00z",
        "2026-03-01T12:07:00+0100",
        "2026-03-01T12:07:00+01",
        "2026-03-01T12:07:00+01:00:30",
        "2026-03-01T12:07:00,5Z",
        "2026-03-01T12:07:00.Z",
        "2026-W09-1T12:07:00Z",
        " 2026-03-01T12:07:00Z",
        "2026-03-01T12:07:00Z ",
        "2026-03-01T12:07:00 Z",
        "+2026-03-01T12:07:00Z",
        "٢٠٢٦-03-01T12:07:00Z",
    ],
)
def test_parse_instant_accepts_only_the_documented_form(text):
    """docs/semantics.md: the only accepted text is YYYY-MM-DDThh:mm:ss[.f{1,6}](Z|±hh:mm),
    the form the Spark engine accepts too."""
    with pytest.raises(TimeFormatError):
        parse_instant(text)


@pytest.mark.parametrize("value", [None, 1_772_366_820, 1.5, b"2026-03-01T12:07:00Z", []])
def test_parse_instant_rejects_non_strings(value):
    with pytest.raises(TimeFormatError):
        parse_instant(value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1969-12-31T23:59:59Z", -SECOND),
        ("1969-12-31T23:59:59.999999Z", -1),
        ("1969-12-31T23:59:59.5Z", -500_000),
        ("1969-12-31T23:59:59.000001Z", -999_999),
        ("1970-01-01T00:00:00.000001Z", 1),
        ("1969-12-31T23:00:00-01:00", 0),
        ("1900-01-01T00:00:00.000001Z", -2_208_988_799_999_999),
        ("0001-01-01T00:00:00Z", -62_135_596_800_000_000),
    ],
)
def test_parse_instant_pre_1970_is_exact(text, expected):
    value = parse_instant(text)
    assert value == expected
    assert type(value) is int


def test_parse_instant_is_exact_far_from_the_epoch():
    # 2**53 microseconds is where a float would start losing microseconds.
    value = parse_instant("2262-04-11T23:47:16.854775Z")
    assert value == 9_223_372_036_854_775
    assert parse_instant("2262-04-11T23:47:16.854776Z") - value == 1


# ---------------------------------------------------------------------------- format_instant


def test_format_instant_basic():
    assert format_instant(T0) == "2026-03-01T12:07:00Z"
    assert format_instant(0) == "1970-01-01T00:00:00Z"
    assert format_instant(None) is None


@pytest.mark.parametrize(
    ("instant", "text"),
    [
        (T0 + 500_000, "2026-03-01T12:07:00.5Z"),
        (T0 + 1, "2026-03-01T12:07:00.000001Z"),
        (T0 + 123_456, "2026-03-01T12:07:00.123456Z"),
        (T0 + 120_000, "2026-03-01T12:07:00.12Z"),
        (-1, "1969-12-31T23:59:59.999999Z"),
        (-SECOND, "1969-12-31T23:59:59Z"),
        (-500_000, "1969-12-31T23:59:59.5Z"),
    ],
)
def test_format_instant_fractions_and_pre_epoch(instant, text):
    assert format_instant(instant) == text


@pytest.mark.parametrize(
    "instant",
    [
        0,
        1,
        -1,
        T0,
        T0 + 1,
        T0 - 1,
        T0 + 999_999,
        -SECOND,
        -SECOND - 1,
        -DAY + 7,
        -2_208_988_799_999_999,  # 1900
        -62_135_596_800_000_000,  # 0001-01-01
        -62_135_596_800_000_000 + 123_456,
        -30_000_000_000_000_000,  # about year 1019
        253_402_300_799_999_999,  # 9999-12-31T23:59:59.999999Z
    ],
)
def test_format_instant_round_trips(instant):
    text = format_instant(instant)
    assert text is not None and text.endswith("Z")
    assert parse_instant(text) == instant


@pytest.mark.parametrize("text", ["0001-01-01T00:00:00Z", "0999-12-31T23:59:59.25Z"])
def test_format_instant_writes_four_digit_years(text):
    assert format_instant(parse_instant(text)) == text


def test_round_trip_through_offsets_normalises_to_utc():
    assert format_instant(parse_instant("2026-03-01T13:07:00.25+01:00")) == (
        "2026-03-01T12:07:00.25Z"
    )


# ---------------------------------------------------------------------------- datetimes


def test_from_datetime_and_to_datetime():
    aware = datetime(2026, 3, 1, 13, 7, tzinfo=timezone(timedelta(hours=1)))
    assert from_datetime(aware) == T0
    assert type(from_datetime(aware)) is int
    assert to_datetime(T0) == datetime(2026, 3, 1, 12, 7, tzinfo=UTC)
    assert to_datetime(-1) == datetime(1969, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC)
    assert from_datetime(to_datetime(-1)) == -1


def test_from_datetime_rejects_naive():
    with pytest.raises(TimeFormatError) as info:
        from_datetime(datetime(2026, 3, 1, 12, 7))
    assert "zone" in str(info.value)


# ---------------------------------------------------------------------------- parse_duration


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("500ms", 500 * MILLISECOND),
        ("5s", 5 * SECOND),
        ("2m", 2 * MINUTE),
        ("1h", HOUR),
        ("1d", DAY),
        ("1m30s", 90 * SECOND),
        ("1h30m", 90 * MINUTE),
        ("1d2h3m4s5ms", DAY + 2 * HOUR + 3 * MINUTE + 4 * SECOND + 5 * MILLISECOND),
        ("1s500ms", 1_500_000),
        ("250us", 250),
        ("0", 0),
        ("0s", 0),
        ("0ms", 0),
        ("90s", 90 * SECOND),
        ("  5s  ", 5 * SECOND),
        ("5S", 5 * SECOND),
        ("1000000d", 1_000_000 * DAY),
    ],
)
def test_parse_duration(text, expected):
    value = parse_duration(text)
    assert value == expected
    assert type(value) is int


def test_parse_duration_none_only_when_allowed():
    assert parse_duration("none", allow_none=True) is None
    assert parse_duration("None", allow_none=True) is None
    with pytest.raises(TimeFormatError):
        parse_duration("none")


def test_parse_duration_negative_only_when_allowed():
    assert parse_duration("-5s", allow_negative=True) == -5 * SECOND
    assert parse_duration("-1m30s", allow_negative=True) == -90 * SECOND
    assert parse_duration("-1us", allow_negative=True) == -1
    with pytest.raises(TimeFormatError):
        parse_duration("-5s")
    with pytest.raises(TimeFormatError):
        parse_duration("-none", allow_none=True, allow_negative=True)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "5",
        "00",
        "s",
        "ms",
        "-",
        "5x",
        "5sec",
        "5 s",
        "5seconds",
        "1.5s",
        "1,5s",
        "5y",
        "5w",
        "1m-30s",
        "+5s",
        "5s!",
        "abc",
        "PT5S",
        "5s 3m",
        "--5s",
        "٣s",  # an Arabic-Indic digit: not part of the grammar
        "inf",
        "nan",
    ],
)
def test_parse_duration_rejects_garbage(text):
    with pytest.raises(TimeFormatError):
        parse_duration(text, allow_none=True, allow_negative=True)


@pytest.mark.parametrize("value", [5, 5.0, None, b"5s", ["5s"], True])
def test_parse_duration_rejects_non_strings(value):
    with pytest.raises(TimeFormatError):
        parse_duration(value)


# ---------------------------------------------------------------------------- format_duration


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "none"),
        (0, "0s"),
        (1, "1us"),
        (500 * MILLISECOND, "500ms"),
        (5 * SECOND, "5s"),
        (90 * SECOND, "1m30s"),
        (2 * MINUTE, "2m"),
        (HOUR, "1h"),
        (DAY, "1d"),
        (DAY + 1, "1d1us"),
        (1_500_000, "1s500ms"),
        (-5 * SECOND, "-5s"),
        (-90 * SECOND, "-1m30s"),
    ],
)
def test_format_duration(value, text):
    assert format_duration(value) == text


@pytest.mark.parametrize(
    "value",
    [0, 1, 999, 1_000, 1_001, 59 * SECOND, 61 * SECOND, 25 * HOUR + 7, 123_456_789_012, 10**15],
)
def test_format_duration_round_trips(value):
    assert parse_duration(format_duration(value)) == value
    assert parse_duration(format_duration(-value), allow_negative=True) == -value


def test_format_duration_none_round_trips():
    assert parse_duration(format_duration(None), allow_none=True) is None


def test_round_duration_keeps_two_units():
    from sparktide.time import round_duration

    assert round_duration(0) == "0s"
    assert round_duration(5) == "5us"
    assert round_duration(11_438_918) == "11s438ms"
    assert round_duration(23_083_572_961_337) == "267d4h"
    assert round_duration(90 * 1_000_000) == "1m30s"
    assert round_duration(-2_500_000) == "-2s500ms"
