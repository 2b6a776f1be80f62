"""BFCL's overall as the leaderboard computes it (bfcl-eval 2026.3.23, `generate_leaderboard_csv`)."""

from __future__ import annotations

import pytest

from envsched_lightning.leaderboard import bfcl_overall


def test_sections_average_as_the_leaderboard_does_and_missing_categories_count_zero():
    scores = {
        "bfcl_simple": (0.9, 400), "bfcl_multiple": (0.8, 200), "bfcl_parallel": (0.7, 200),
        "bfcl_parallel_multiple": (0.6, 200), "bfcl_live_simple": (0.5, 258), "bfcl_live_multiple": (0.4, 1053),
        "bfcl_live_parallel": (1.0, 16), "bfcl_live_parallel_multiple": (0.0, 24), "bfcl_irrelevance": (0.8, 240),
        "bfcl_live_irrelevance": (0.6, 884), "bfcl_live_relevance": (1.0, 16), "bfcl_multi_turn_base": (0.4, 200),
        "banking": (1.0, 10),  # not BFCL: ignored
    }  # fmt: skip
    board = bfcl_overall(scores)
    simple = (0.9 + 0 + 0) / 3  # java and javascript not evaluated: 0, as upstream
    assert board.sections["non_live"] == pytest.approx((simple + 0.8 + 0.7 + 0.6) / 4)
    assert board.sections["live"] == pytest.approx((0.5 * 258 + 0.4 * 1053 + 1.0 * 16 + 0.0 * 24) / 1351)  # task-weighted
    assert board.sections["irrelevance"] == pytest.approx(0.7)  # live_relevance is not counted
    assert board.sections["multi_turn"] == pytest.approx(0.1) and board.sections["agentic"] == 0.0
    s = board.sections
    assert board.overall == pytest.approx(0.1 * s["non_live"] + 0.1 * s["live"] + 0.1 * s["irrelevance"] + 0.3 * 0.1)
    assert "simple_java" in board.missing and "memory_kv" in board.missing and "live_relevance" not in board.missing
    assert "counted as 0" in board.markdown() and not board.limited


def test_a_limited_evaluation_is_labelled_and_no_bfcl_gives_none():
    board = bfcl_overall({"bfcl_simple": (1.0, 20)}, full_counts={"bfcl_simple": 400})
    assert board.limited and "not comparable" in board.markdown()
    assert bfcl_overall({"banking": (1.0, 3)}) is None
