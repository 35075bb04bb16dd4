#!/usr/bin/env python3
"""The arithmetic the benchmark studies report with: Kendall tau, the non-negative least squares
of the latency model and its retyped-width term, the Pareto front, and the machines a results
folder was measured on."""
import json
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import bench  # noqa: E402
import shaping  # noqa: E402


class KendallTau(unittest.TestCase):
    def test_same_order_is_one_and_reversed_is_minus_one(self):
        self.assertEqual(shaping.kendall_tau([1, 2, 3, 4], [10, 20, 30, 40]), 1.0)
        self.assertEqual(shaping.kendall_tau([1, 2, 3, 4], [40, 30, 20, 10]), -1.0)

    def test_one_swapped_pair_of_six(self):
        self.assertAlmostEqual(shaping.kendall_tau([1, 2, 3, 4], [10, 30, 20, 40]), 4 / 6)


class NonNegativeLeastSquares(unittest.TestCase):
    def test_recovers_non_negative_costs(self):
        rows = [[1.0, x, y] for x in (1, 2, 3) for y in (1, 5)]
        costs = [2.0, 3.0, 0.5]
        targets = [sum(c * v for c, v in zip(costs, row)) for row in rows]
        for got, want in zip(shaping.solve_nonnegative(rows, targets), costs):
            self.assertAlmostEqual(got, want, places=4)  # up to the tiny ridge that keeps the system solvable

    def test_never_negative_where_the_free_fit_is(self):
        rows = [[1.0, x] for x in (1, 2, 3, 4)]
        targets = [8.0, 6.0, 4.0, 2.0]  # falls with x: the free fit's slope is -2
        self.assertLess(shaping.solve(rows, targets)[1], 0)
        fit = shaping.solve_nonnegative(rows, targets)
        self.assertTrue(all(c >= 0 for c in fit))
        self.assertAlmostEqual(fit[0], 5.0, places=4)  # the best constant: the mean
        self.assertAlmostEqual(fit[1], 0.0, places=4)


class Pareto(unittest.TestCase):
    def test_keeps_only_the_points_nothing_beats_on_both(self):
        points = [(1, 9), (2, 5), (3, 6), (4, 1), (5, 1)]
        front = shaping.pareto(points, lambda p: p[0], lambda p: p[1])
        self.assertEqual(front, [(1, 9), (2, 5), (4, 1)])


class RetypedWidths(unittest.TestCase):
    def test_a_width_is_retyped_where_its_bits_per_weight_differ_from_the_source(self):
        study = shaping.Study(Path("m.gguf"), Path("."), 2, 512, 1536, [512], [1280, 1504, 1536], 256)
        source = {"bytes": 500, "parameters": 800}
        for width, bytes_ in ((1280, 400), (1504, 470)):  # 5 bits per weight kept; 5.875 at 1504
            shape = study.shape((0, 1), (), 0, width)
            study.records[shape.key()] = {"bytes": bytes_, "parameters": 640}
        study.retyped_widths = shaping.retyped_widths(study, source)
        self.assertEqual(study.retyped_widths, {1504})
        # The retyped term is the FFN term where the width is retyped, zero elsewhere.
        self.assertEqual(shaping.features(study, study.shape((0, 1), (), 0, 1280))[-1], 0.0)
        self.assertAlmostEqual(shaping.features(study, study.shape((0, 1), (), 0, 1504))[-1], 1504 / 1536)


class MeasuredOn(unittest.TestCase):
    def test_names_each_machine_with_its_stages_and_models(self):
        with tempfile.TemporaryDirectory() as folder:
            out = Path(folder)
            (out / "measured-on.json").write_text(json.dumps({
                "modes a": {"machine": "CPU one", "date": "2026-11-30"},
                "modes b": {"machine": "CPU one", "date": "2026-11-30"},
                "coldstart b": {"machine": "CPU two", "date": "2026-12-01"}}))
            text = bench.measured_on(out)
        self.assertIn("CPU one, 2026-11-30: modes (a, b)", text)
        self.assertIn("CPU two, 2026-12-01: coldstart (b)", text)
        self.assertLess(text.index("CPU one"), text.index("CPU two"))


if __name__ == "__main__":
    unittest.main()
