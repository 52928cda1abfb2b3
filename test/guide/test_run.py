#!/usr/bin/env python3
"""Tests of run.py's matching of a program's output against the guide's output blocks."""

import os
import sys
import unittest

sys.dont_write_bytecode = True   # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import match_ordered, match_unordered  # noqa: E402


class Ordered(unittest.TestCase):
    def test_exact(self):
        self.assertTrue(match_ordered(["a", "b"], ["a", "b"]))
        self.assertFalse(match_ordered(["a", "b"], ["b", "a"]))
        self.assertFalse(match_ordered(["a"], ["a", "b"]))
        self.assertFalse(match_ordered(["a", "b"], ["a"]))
        self.assertFalse(match_ordered(["a"], ["a "]))

    def test_ellipsis_line_stands_for_any_run_of_lines(self):
        self.assertTrue(match_ordered(["a", "...", "z"], ["a", "z"]))
        self.assertTrue(match_ordered(["a", "...", "z"], ["a", "b", "c", "z"]))
        self.assertFalse(match_ordered(["a", "...", "z"], ["a", "b"]))
        self.assertTrue(match_ordered(["..."], []))
        self.assertTrue(match_ordered(["...", "z"], ["x", "y", "z"]))
        self.assertFalse(match_ordered(["...", "z"], ["z", "y"]))

    def test_ellipsis_inside_a_line_stands_for_any_text(self):
        self.assertTrue(match_ordered(["took ... ms"], ["took 0.25 ms"]))
        self.assertTrue(match_ordered(["took ... ms"], ["took  ms"]))
        self.assertFalse(match_ordered(["took ... ms"], ["took 0.25 s"]))
        self.assertFalse(match_ordered(["took ... ms"], ["took 1 ms", "more"]))
        self.assertTrue(match_ordered(["a.b ... [x]"], ["a.b 1 [x]"]))
        self.assertFalse(match_ordered(["a.b ... [x]"], ["aXb 1 [x]"]))


class Unordered(unittest.TestCase):
    def test_without_ellipsis_the_lines_are_compared_as_a_multiset(self):
        self.assertTrue(match_unordered(["a", "b", "b"], ["b", "a", "b"]))
        self.assertFalse(match_unordered(["a", "b", "b"], ["b", "a", "a"]))
        self.assertFalse(match_unordered(["a", "b"], ["b", "a", "c"]))

    def test_head_and_tail_stay_in_place(self):
        pattern = ["head", "...", "2", "1", "...", "tail"]
        self.assertTrue(match_unordered(pattern, ["head", "1", "3", "2", "tail"]))
        self.assertTrue(match_unordered(pattern, ["head", "2", "1", "tail"]))
        self.assertFalse(match_unordered(pattern, ["1", "head", "2", "tail"]))
        self.assertFalse(match_unordered(pattern, ["head", "1", "2", "tail", "x"]))
        self.assertFalse(match_unordered(pattern, ["head", "1", "3", "tail"]))

    def test_each_sample_needs_its_own_line(self):
        pattern = ["...", "x", "x", "..."]
        self.assertTrue(match_unordered(pattern, ["x", "y", "x"]))
        self.assertFalse(match_unordered(pattern, ["x", "y"]))

    def test_head_and_tail_cannot_share_lines(self):
        self.assertFalse(match_unordered(["a", "...", "a"], ["a"]))
        self.assertTrue(match_unordered(["a", "...", "a"], ["a", "a"]))


if __name__ == "__main__":
    unittest.main()
