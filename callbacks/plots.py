"""Matplotlib renderings for the scheduling logger, written as PNG files (no W&B needed).

Figures are built on `matplotlib.figure.Figure` directly, not through pyplot: nothing global is
touched (importing a callback must not switch a notebook's backend) and no figure leaks.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle


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
    return _save(heatmap_figure(counts, env_names, first_step, scheduler=scheduler, run=run), path)


def env_effects_figure(effect: np.ndarray, t: np.ndarray, env_names: Sequence[str], critical_t: float, *,
                       scheduler: str | None = None, run: str | None = None, step: int | None = None) -> Figure:  # fmt: skip
    """`effect[e, f]`: change in an `f` task's group mean per informative group trained on `e`, coloured
    on a scale centred at 0 (red: lowers), each cell with its t statistic; cells beyond `critical_t`
    (significant after the Bonferroni correction, either sign; the scheduler acts on negative ones) are
    outlined, unknown ones (too few re-picks) left blank."""
    n = len(env_names)
    fig = Figure(figsize=(0.6 * n + 3.5, 0.5 * n + 2.0))
    ax = fig.add_subplot()
    finite = effect[np.isfinite(effect)]
    scale = float(np.abs(finite).max()) if finite.size and np.abs(finite).max() > 0 else 1.0
    im = ax.imshow(np.ma.masked_invalid(effect), cmap="RdBu", vmin=-scale, vmax=scale, interpolation="nearest")
    for e in range(n):
        for f in range(n):
            if np.isfinite(t[e, f]):
                ax.text(f, e, f"{t[e, f]:.1f}", ha="center", va="center", fontsize=7)
                if e != f and abs(t[e, f]) >= critical_t:
                    ax.add_patch(Rectangle((f - 0.5, e - 0.5), 1, 1, fill=False, lw=2, ec="black"))
    ax.set_xticks(range(n), labels=list(env_names), rotation=45, ha="right")
    ax.set_yticks(range(n), labels=list(env_names))
    ax.set_xlabel("observed environment (rewards moved)")
    ax.set_ylabel("trained environment")
    title = "environment effects (t in cells)" + (f": scheduler {scheduler}" if scheduler else "")
    title += f", step {step}" if step is not None else ""
    ax.set_title(title + (f"\nrun {run}" if run else ""), fontsize=10)
    fig.colorbar(im, ax=ax, label="group mean change per group trained")
    fig.tight_layout()
    return fig


def save_env_effects(effect: np.ndarray, t: np.ndarray, env_names: Sequence[str], critical_t: float, path: Path, *,
                     scheduler: str | None = None, run: str | None = None, step: int | None = None) -> Path:  # fmt: skip
    return _save(env_effects_figure(effect, t, env_names, critical_t, scheduler=scheduler, run=run, step=step), path)


def _save(fig: Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    return path
