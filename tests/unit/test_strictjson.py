"""Strict JSON: what Python's json would write as NaN or Infinity is null."""

from __future__ import annotations

import io
import json

import testtools

from hpc_nova_scheduler import strictjson


class TestStrictJson(testtools.TestCase):
    def test_non_finite_values_become_null_at_any_depth(self) -> None:
        value = {"a": float("nan"), "b": [1.0, float("inf"), {"c": -float("inf")}], "d": (2,)}
        text = strictjson.dumps(value)
        self.assertEqual({"a": None, "b": [1.0, None, {"c": None}], "d": [2]}, json.loads(text))
        stream = io.StringIO()
        strictjson.dump(value, stream)
        self.assertEqual(text, stream.getvalue())

    def test_finite_values_are_unchanged(self) -> None:
        value = {"x": 1.5, "y": "nan", "z": None, "w": True}
        self.assertEqual(value, json.loads(strictjson.dumps(value)))
