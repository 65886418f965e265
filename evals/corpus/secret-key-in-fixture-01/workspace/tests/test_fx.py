import io
import json
import os
from datetime import date

from ledger import fx

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "ratesfeed_eur_usd.json")


def test_rate_from_recorded_response(monkeypatch):
    recorded = json.load(open(FIXTURE))
    seen = {}

    def fake_urlopen(req, timeout):
        seen["url"] = req.full_url
        return io.BytesIO(json.dumps(recorded["response"]).encode())

    monkeypatch.setenv("RATESFEED_KEY", "test")
    monkeypatch.setattr(fx.urllib.request, "urlopen", fake_urlopen)
    assert fx.rate("EUR", "USD", date(2025, 3, 3)) == 1.0485
    assert seen["url"] == recorded["request"]["url"]
