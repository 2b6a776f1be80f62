"""Matplotlib renderings for the scheduling logger, written as PNG files (no W&B needed)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: never needs a display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def save_heatmap(counts: np.ndarray, env_names: Sequence[str], path: Path, first_step: int = 0) -> Path:
    """`counts[e, s]`: rollouts spent on environment `e` at step `s`, as an env-by-step image."""
    fig, ax = plt.subplots(figsize=(max(4.0, 0.12 * counts.shape[1] + 2.5), 0.35 * len(env_names) + 1.5))
    im = ax.imshow(counts, aspect="auto", interpolation="nearest", cmap="viridis",
                   extent=(first_step - 0.5, first_step + counts.shape[1] - 0.5, len(env_names) - 0.5, -0.5))  # fmt: skip
    ax.set_yticks(range(len(env_names)), labels=list(env_names))
    ax.set_xlabel("training step")
    ax.set_title("rollouts per environment")
    fig.colorbar(im, ax=ax, label="rollouts")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
