"""Matplotlib renderings for the scheduling logger, written as PNG files (no W&B needed).

Figures are built on `matplotlib.figure.Figure` directly, not through pyplot: nothing global is
touched (importing a callback must not switch a notebook's backend) and no figure leaks.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure


def heatmap_figure(counts: np.ndarray, env_names: Sequence[str], first_step: int = 0, *,
                   scheduler: str | None = None, run: str | None = None) -> Figure:  # fmt: skip
    """`counts[e, s]`: rollouts spent on environment `e` at step `first_step + s`, as an env-by-step
    image titled with the scheduler and the run, so a PNG found on disk says where it came from."""
    fig = Figure(figsize=(max(5.0, 0.12 * counts.shape[1] + 2.5), 0.35 * len(env_names) + 2.0))
    ax = fig.add_subplot()
    im = ax.imshow(counts, aspect="auto", interpolation="nearest", cmap="viridis",
                   extent=(first_step - 0.5, first_step + counts.shape[1] - 0.5, len(env_names) - 0.5, -0.5))  # fmt: skip
    ax.set_yticks(range(len(env_names)), labels=list(env_names))
    ax.set_xlabel("GRPO step")
    ax.set_ylabel("environment")
    title = "rollouts per environment" + (f": scheduler {scheduler}" if scheduler else "")
    ax.set_title(title + (f"\nrun {run}" if run else ""), fontsize=10)
    fig.colorbar(im, ax=ax, label="rollouts")
    fig.tight_layout()
    return fig


def save_heatmap(counts: np.ndarray, env_names: Sequence[str], path: Path, first_step: int = 0, *,
                 scheduler: str | None = None, run: str | None = None) -> Path:  # fmt: skip
    fig = heatmap_figure(counts, env_names, first_step, scheduler=scheduler, run=run)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    return path
