"""Numbers as answers write them: never in exponent form, whatever the size a user typed."""

from hypothesis import given
from hypothesis import strategies as st

from tools.units import plain


def test_small_and_large_sizes_read_as_typed():
    assert plain(0.000001) == "0.000001"
    assert plain(69.7) == "69.7"
    assert plain(70.0) == "70"
    assert plain(10_000_000.0) == "10000000"
    assert plain(-0.00001) == "-0.00001"


@given(st.floats(min_value=1e-9, max_value=1e12, allow_nan=False))
def test_plain_has_no_exponent_and_keeps_the_value(value):
    text = plain(value)
    assert "e" not in text
    assert abs(float(text) - value) <= max(abs(value) * 1e-5, 1e-9)
