"""Where `iofleet serve` may listen: loopback freely, elsewhere only with a token."""

import pytest

from iofleet.errors import IofleetError
from iofleet.web.bind import parse_web_bind

TOKEN = "0123456789abcdef"


@pytest.mark.parametrize("bind, expected", [
    ("127.0.0.1:8080", ("127.0.0.1", 8080)),
    ("127.0.0.1", ("127.0.0.1", 8080)),  # the web UI's port, not fio's 8765
    ("localhost:9000", ("localhost", 9000)),
    ("[::1]:8081", ("::1", 8081)),
    ("::1", ("::1", 8080)),
])
def test_loopback_needs_no_token(bind, expected):
    assert parse_web_bind(bind, None) == expected


@pytest.mark.parametrize("bind", ["0.0.0.0:8080", "10.0.0.5", "[::]:8080", "storage01:8080"])
def test_any_other_address_needs_a_token(bind):
    with pytest.raises(IofleetError, match="needs --token"):
        parse_web_bind(bind, None)
    assert parse_web_bind(bind, TOKEN)[1] == 8080


@pytest.mark.parametrize("bind", ["http://x:80", "1.2.3.4:99999", "", "a b"])
def test_bad_bind_is_one_clear_line(bind):
    with pytest.raises(IofleetError, match="--bind"):
        parse_web_bind(bind, TOKEN)


def test_short_token_is_refused():
    with pytest.raises(IofleetError, match="at least 16 characters"):
        parse_web_bind("127.0.0.1:8080", "short")
