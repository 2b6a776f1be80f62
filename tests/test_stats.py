"""The paired-seed statistics behind the GRPO benchmark's verdict (benchmarks/stats.py)."""

from __future__ import annotations

import numpy as np

from benchmarks.grpo_efficiency import display
from benchmarks.stats import bootstrap, mean_curve_band, paired_difference, verdict


def test_a_consistent_paired_gain_is_significant_and_noise_is_not():
    rng = np.random.default_rng(0)
    base = rng.uniform(0.2, 0.6, 10)  # seeds differ a lot from each other ...
    gain = paired_difference(base + 0.05 + rng.normal(0, 0.01, 10), base)  # ... the paired gain does not
    assert gain.low > 0 and abs(gain.estimate - 0.05) < 0.01
    assert "significant, envsched higher" in verdict(gain, "envsched", "random")
    noise = paired_difference(base + rng.normal(0, 0.05, 10), base)
    assert noise.low < 0 < noise.high
    assert "not significant" in verdict(noise, "envsched", "random")


def test_unpaired_spread_would_hide_the_same_gain():
    """Why pairing matters: the same +0.05 against seed-to-seed spread of 0.1 is not resolved unpaired."""
    rng = np.random.default_rng(1)
    base = rng.uniform(0.2, 0.6, 10)
    better = base + 0.05
    unpaired = bootstrap(lambda idx: float(better[idx].mean() - base[rng.permutation(10)][idx].mean()), 10, seed=3)
    assert unpaired.low < 0 < unpaired.high
    assert paired_difference(better, base).low > 0.049


def test_curve_band_holds_the_mean_and_one_seed_has_no_interval():
    curves = np.array([[0.1, 0.3, 0.5], [0.2, 0.4, 0.4], [0.0, 0.2, 0.6]])
    mean, low, high = mean_curve_band(curves, n_boot=500)
    np.testing.assert_allclose(mean, curves.mean(0))
    assert (low <= mean).all() and (mean <= high).all() and (low >= curves.min(0)).all()
    one = paired_difference(np.array([0.3]), np.array([0.2]))
    assert np.isnan(one.low) and "one seed" in verdict(one, "a", "b")


def test_table_cells_carry_their_intervals():
    row = {"scheduler": "envsched", "final": 0.3125, "final_ci": [0.25, 0.375], "ratio": 2.0, "ratio_ci": [float("nan")] * 2}
    assert display(row) == {"scheduler": "envsched", "final": "0.312 [0.250, 0.375]", "ratio": 2.0}
