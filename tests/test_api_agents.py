from __future__ import annotations
import json
import pytest
from tests.conftest import SAMPLE_CONFIG

CASES = {
 "empty": "",
 "list": "[]",
 "malformed": '{"name":',
 "nan": '{"name":"x","background":{"sections":[{"id":"a","title":"A","entries":[{"key":"k","value":NaN}]}]}}',
 "inf": '{"name":"x","background":{"sections":[{"id":"a","title":"A","entries":[{"key":"k","value":Infinity}]}]}}',
 "nul": json.dumps({"name": "x\u0000y"}),
 "nulvalue": json.dumps({"name": "x","background":{"sections":[{"id":"a","title":"A","entries":[{"key":"k","value":"a\u0000b"}]}]}}),
 "surrogate": '{"name":"x\\ud800y"}',
 "nullvalue": json.dumps({"name": "x","background":{"sections":[{"id":"a","title":"A","entries":[{"key":"k","value":None}]}]}}),
 "listvalue": json.dumps({"name": "x","background":{"sections":[{"id":"a","title":"A","entries":[{"key":"k","value":[1]}]}]}}),
 "promo": json.dumps({"name": "x","background":{"sections":[{"id":"a","title":"A","promotion":"superuser"}]}}),
 "extra": json.dumps({"name": "x","colour":"red"}),
 "missing": json.dumps({}),
 "string": '"hello"',
 "bigint": json.dumps({"name": "x","background":{"sections":[{"id":"a","title":"A","entries":[{"key":"k","value":10**30}]}]}}),
 "float3": json.dumps({"name": "x","background":{"sections":[{"id":"a","title":"A","entries":[{"key":"k","value":3.0}]}]}}),
 "dupe": json.dumps({"name": "x","background":{"sections":[{"id":"a","title":"A"},{"id":"a","title":"B"}]}}),
}

@pytest.mark.django_db
@pytest.mark.parametrize("name", list(CASES))
def test_probe(api, name):
    try:
        r = api.put("/api/agents/probe", raw=CASES[name])
        print("\nPROBE", name, r.status_code, r.content[:400])
        if r.status_code < 300:
            print("GET", api.get("/api/agents/probe").content[:400])
    except Exception as e:
        print("\nPROBE", name, "EXC", repr(e)[:300])
