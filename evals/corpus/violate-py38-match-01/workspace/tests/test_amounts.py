import pytest

from ledger.models import parse_amount


@pytest.mark.parametrize("text,cents", [("12.50", 1250), ("12,5", 1250), ("€12.50", 1250), ("1250c", 1250), ("7", 700)])
def test_parse_amount(text, cents):
    assert parse_amount(text) == cents


def test_empty_is_none():
    assert parse_amount("  ") is None


def test_garbage_raises():
    with pytest.raises(ValueError):
        parse_amount("twelve")
