"""The one formatter of measured figures (iofleet.units)."""

import pytest

from iofleet.units import format_value, shown_unit, to_ms


@pytest.mark.parametrize(("value", "unit", "text"), [
    (1_234_567, "ns", "1.235"),       # latency is shown in ms to the µs, whatever it is stored in
    (1234.567, "us", "1.235"),
    (1.2345678, "ms", "1.235"),
    (1_234_500.0, "us", "1234.500"),  # no thousands separator in a latency
    (1_234_567.4, "IOPS", "1,234,567"),
    (1234.56, "MB/s", "1,234.6"),
    (12.34, "%", "12.3"),
    (0, "us", "0.000"),
])
def test_each_unit_has_one_rule(value, unit, text):
    assert format_value(value, unit) == text


def test_with_unit_names_the_shown_unit():
    assert format_value(1_500_000, "ns", with_unit=True) == "1.500 ms"
    assert format_value(2500, "IOPS", with_unit=True) == "2,500 IOPS"
    assert shown_unit("us") == "ms" and shown_unit("MB/s") == "MB/s"


@pytest.mark.parametrize(("us", "text"), [
    (123.4, "0.123 ms"), (1234.5, "1.23 ms"), (12_345, "12.3 ms"), (123_456, "123 ms"), (1_234_567, "1235 ms"),
])
def test_short_latency_keeps_about_three_digits(us, text):
    assert format_value(us, "us", with_unit=True, short=True) == text


def test_a_missing_figure_is_never_zero():
    assert format_value(None, "us") == "n/a"
    assert format_value(None, "ns", with_unit=True) == "n/a"
    assert format_value(None, "ns", missing="-") == "-"


def test_to_ms_for_charts_and_json():
    assert to_ms(1_500_000, "ns") == 1.5 and to_ms(250, "us") == 0.25 and to_ms(None, "us") is None
    with pytest.raises(ValueError, match="not a latency unit"):
        to_ms(5, "IOPS")


def test_a_latency_at_fio_s_histogram_ceiling_is_shown_as_a_lower_bound_in_every_unit():
    from iofleet.units import LATENCY_CEILING_NS
    top = 17_112_760_320  # what fio shows for its top bucket (ns): every IO from 17.046 s up
    assert format_value(top, "ns") == format_value(top / 1e3, "us") == format_value(top / 1e6, "ms") == "≥ 17045.651"
    assert format_value(top, "ns", with_unit=True, short=True) == "≥ 17046 ms"
    assert format_value(LATENCY_CEILING_NS - 1, "ns") == "17045.651"  # just under it: a measured value
