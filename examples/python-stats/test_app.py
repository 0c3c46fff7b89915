"""Unit tests of the example's actions, natively (no component):
PYTHONPATH=sdk/python python3 -m unittest discover examples/python-stats"""

import json
import unittest

import app
from _quiver_native import Err, Error_Failed, Error_InvalidInput


class StatsTest(unittest.TestCase):
    def test_actions_compute(self):
        self.assertEqual(app.summarize([1, 2, 2, 3, 10])["median"], 2)
        self.assertEqual(app.factorize(360), {"factors": [2, 2, 2, 3, 3, 5]})
        self.assertEqual(app.regression([1, 2, 3], [2, 4, 6])["slope"], 2.0)

    def test_schemas_come_from_type_hints_and_docstrings(self):
        manifest = app.tools.manifest()
        quantiles = next(a for a in manifest.actions if a.name == "quantiles")
        schema = json.loads(quantiles.input_schema)
        self.assertEqual(schema["required"], ["numbers"])
        self.assertEqual(schema["properties"]["method"]["enum"], ["exclusive", "inclusive"])
        self.assertEqual(schema["properties"]["n"], {
            "type": "integer", "default": 4,
            "description": "How many groups: 4 for quartiles, 10 for deciles, 100 for percentiles.",
        })
        self.assertTrue(quantiles.description.startswith("Cut points that divide numbers"))

    def test_errors_are_typed(self):
        with self.assertRaises(Err) as raised:
            app.tools.invoke("summarize", '{"numbers": []}')
        self.assertEqual(raised.exception.value, Error_InvalidInput("give at least one number"))
        with self.assertRaises(Err) as raised:
            app.tools.invoke("quantiles", '{"numbers": [1, 2], "n": 0}')
        self.assertEqual(raised.exception.value, Error_Failed("StatisticsError: n must be at least 1"))


if __name__ == "__main__":
    unittest.main()
