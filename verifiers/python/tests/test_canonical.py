"""Canonical JSON as spec §5 defines it (JavaScript's JSON.stringify on key-sorted plain objects)."""
import pytest

import plan_ledger_verify as v


@pytest.mark.parametrize("value,text", [
    ({"b": [1, "x"], "a": None}, '{"a":null,"b":[1,"x"]}'),
    ({"z": True, "A": False, "_": 0}, '{"A":false,"_":0,"z":true}'),
    (2.0, "2"), (1.5, "1.5"), (-0.0, "0"), (1e21, "1e+21"), (1e20, "100000000000000000000"), (1e-7, "1e-7"), (0.000001, "0.000001"), (1e16, "10000000000000000"),
    ("tab\tquote\"back\\slash\u0001\u007f", '"tab\\tquote\\"back\\\\slash\\u0001\u007f"'),
    ("é€😀", '"é€😀"'),
    # UTF-16 code unit order: U+FF61 sorts after U+1F600 (its high surrogate is U+D83D) — code point order would differ.
    ({"\uff61": 1, "\U0001f600": 2}, '{"\U0001f600":2,"\uff61":1}'),
])
def test_canonical(value, text):
    assert v.canonical_json(value) == text


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), 2**53 + 1, object()])
def test_not_canonical(bad):
    with pytest.raises(ValueError):
        v.canonical_json({"x": bad})


def test_partition_and_key():
    # FNV-1a 32-bit: the offset basis for the empty id, and a value checked by hand.
    assert v.partition_for("", 1 << 32) == 0x811C9DC5
    assert v.partition_for("a", 1 << 32) == 0xE40C292C
    assert v.parse_key(b"plan:with:colons:12") == ("plan:with:colons", 12)
    assert v.parse_key(b"no-seq") is None
