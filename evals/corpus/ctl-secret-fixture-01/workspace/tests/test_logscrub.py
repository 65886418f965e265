import logging

from ledger.logscrub import ScrubFilter, scrub

# AWS's documented example credentials: they look real and are not.
EXAMPLE_KEY_ID = "AKIAIOSFODNN7EXAMPLE"
EXAMPLE_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


def test_scrubs_key_id():
    assert scrub(f"using {EXAMPLE_KEY_ID} for s3") == "using [aws-key-id] for s3"


def test_scrubs_secret_assignment():
    assert scrub(f"aws_secret_access_key = {EXAMPLE_SECRET}") == "aws_secret_access_key = [aws-secret]"


def test_scrubs_bearer():
    assert scrub("Authorization: Bearer abc.def-ghi") == "Authorization: Bearer [token]"


def test_filter_rewrites_record():
    rec = logging.LogRecord("x", logging.INFO, __file__, 1, f"key {EXAMPLE_KEY_ID}", None, None)
    ScrubFilter().filter(rec)
    assert rec.msg == "key [aws-key-id]"
