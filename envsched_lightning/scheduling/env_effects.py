"""How training on each environment moves the others' rewards, estimated from the run's own re-picks.

Training on one environment can lower another's rewards (shared weights, conflicting formats); a
variance-seeking scheduler that feeds such an environment pays for it in the others. No extra
rollouts are needed to look: every re-picked task is an observation. Its change in group mean
since its last group is regressed, per observed environment f, on the informative groups trained on
each environment e in between, with controls for what else moves a re-pick's mean (the last group's
mean and spread: regression to the mean; the step: drift). The fit's
coefficient [e, f] is the change of an f task's group mean per informative group trained on e, and
its t statistic says how far to believe it.

`EnvEffects` keeps per observed environment only the normal equations (D x D with D = E + 4) and the
cumulative informative groups per environment per step, so an update costs O(batch x D^2).
`factor` turns the estimate into a per-environment priority multiplier: an environment e is
discounted only by cross effects significant at `alpha` after a Bonferroni correction over the
E(E - 1) pairs, by the pool-weighted harm they do relative to e's own gain, never below `floor`.
Where no pair is significant (a clean pool, a short run) every factor is 1: it costs nothing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

import numpy as np

from .history import TaskHistory
from .types import ZERO_STD_EPS, RolloutGroup, group_stats

# not the gap in steps: it is the sum of the environments' groups over the batch size, so with it the
# effects are identified only up to a shared shift (each would be "a group" against "a step")
CONTROLS = ("last_mean", "last_std", "step", "intercept")


class EnvEffects:
    """Online least squares of re-pick changes on the environment mix trained in between."""

    def __init__(self, env_ids: np.ndarray, num_envs: int, min_obs: int = 40, alpha: float = 0.05,
                 floor: float = 0.5, ridge: float = 1.0) -> None:  # fmt: skip
        if min_obs < 1 or not 0.0 < alpha < 1.0 or not 0.0 <= floor <= 1.0 or ridge <= 0:
            raise ValueError(f"env effects: need min_obs >= 1, alpha in (0, 1), floor in [0, 1], ridge > 0; got "
                             f"{min_obs}, {alpha}, {floor}, {ridge}")  # fmt: skip
        self.env_ids = np.asarray(env_ids, dtype=np.int64)
        self.num_envs, self.min_obs, self.alpha, self.floor, self.ridge = num_envs, min_obs, alpha, floor, ridge
        d = num_envs + len(CONTROLS)
        self.xtx = np.zeros((num_envs, d, d))  # per observed environment
        self.xty = np.zeros((num_envs, d))
        self.yty = np.zeros(num_envs)
        self.n = np.zeros(num_envs)
        self._mass = np.zeros((64, num_envs))  # rows 0..steps: cumulative informative groups per environment
        self.steps = 0  # updates folded in
        self.start = 0  # re-picks whose last group predates this update are not used (a resume without state)
        self.share = np.bincount(self.env_ids, minlength=num_envs) / max(self.env_ids.size, 1)

    @property
    def mass(self) -> np.ndarray:
        """float[steps + 1, E]: informative groups trained per environment before each update."""
        return self._mass[: self.steps + 1]

    def restart(self, step: int) -> None:
        """Forget everything and go on from update `step` (a checkpoint written without this state)."""
        self.__init__(self.env_ids, self.num_envs, self.min_obs, self.alpha, self.floor, self.ridge)
        self._mass = np.zeros((max(64, 2 * (step + 1)), self.num_envs))
        self.steps = self.start = step

    def observe(self, groups: Sequence[RolloutGroup], history: TaskHistory) -> None:
        """Fold one step's groups in; `history` as it was before this step is recorded."""
        index, mean, std, _ = group_stats(groups)
        if self.steps != history.step:  # a history advanced or loaded without this estimate: it starts afresh
            self.restart(history.step)
        now = self._mass[self.steps].copy()
        seen = (history.count[index] > 0) & (history.last_step[index] > self.start)
        if seen.any():
            i, last = index[seen], history.last_step[index[seen]]
            x = np.column_stack([now - self.mass[last - 1], history.last_mean[i], history.last_std[i],
                                 np.full(i.size, history.step), np.ones(i.size)])  # fmt: skip
            y = mean[seen] - history.last_mean[i]
            f = self.env_ids[i]
            for g in np.unique(f):  # one product per observed environment (np.add.at over [B, D, D] is ~40x slower)
                rows = f == g
                self.xtx[g] += x[rows].T @ x[rows]
                self.xty[g] += x[rows].T @ y[rows]
            self.yty += np.bincount(f, weights=y * y, minlength=self.num_envs)
            self.n += np.bincount(f, minlength=self.num_envs)
        trained = np.bincount(self.env_ids[index[std >= ZERO_STD_EPS]], minlength=self.num_envs)
        if self.steps + 1 >= self._mass.shape[0]:  # amortised growth: doubling
            self._mass = np.vstack([self._mass, np.zeros_like(self._mass)])
        self.steps += 1
        self._mass[self.steps] = now + trained

    def effects(self) -> tuple[np.ndarray, np.ndarray]:
        """(effect float[E, E], t float[E, E]): [trained e, observed f], NaN where f has fewer than
        `min_obs` re-picks."""
        e_ = self.num_envs
        effect, t = np.full((e_, e_), np.nan), np.full((e_, e_), np.nan)
        ridge = np.full(e_ + len(CONTROLS), self.ridge)
        ridge[-1] = 1e-6  # the intercept is not shrunk
        for f in np.flatnonzero(self.n >= self.min_obs):
            inv = np.linalg.inv(self.xtx[f] + np.diag(ridge))
            b = inv @ self.xty[f]
            # residual sum of squares from the sufficient statistics
            rss = max(self.yty[f] - 2 * b @ self.xty[f] + b @ self.xtx[f] @ b, 0.0)
            s2 = rss / max(self.n[f] - b.size, 1.0)
            effect[:, f] = b[:e_]
            t[:, f] = b[:e_] / np.sqrt(np.maximum(np.diag(inv)[:e_] * s2, 1e-30))
        return effect, t

    def critical_t(self) -> float:
        """|t| a cross effect needs: `alpha` two-sided, Bonferroni over the E(E - 1) pairs."""
        pairs = max(self.num_envs * (self.num_envs - 1), 1)
        return NormalDist().inv_cdf(1.0 - self.alpha / (2 * pairs))

    def env_factor(self) -> np.ndarray:
        """float[E] in [floor, 1]: 1 - (pool-weighted significant harm to others / own gain), per trained
        environment; 1 where nothing significant is known."""
        effect, t = self.effects()
        out = np.ones(self.num_envs)
        if self.num_envs < 2:
            return out
        harmful = (t < -self.critical_t()) & ~np.eye(self.num_envs, dtype=bool)
        for e in np.flatnonzero(harmful.any(axis=1)):
            harm = -float((effect[e] * self.share)[harmful[e]].sum())
            own = effect[e, e] * self.share[e]
            # no measured own gain: the harm stands against nothing, so the full discount applies
            ratio = harm / own if math.isfinite(own) and own > 0 else math.inf
            out[e] = max(self.floor, 1.0 - ratio)
        return out

    def factor(self) -> np.ndarray:
        """float[N]: each task's environment factor (`env_factor`)."""
        return self.env_factor()[self.env_ids]

    def state_dict(self) -> dict:
        return {"xtx": self.xtx.copy(), "xty": self.xty.copy(), "yty": self.yty.copy(), "n": self.n.copy(),
                "mass": self.mass.copy(), "start": self.start}  # fmt: skip

    def load_state_dict(self, state: dict) -> None:
        arrays = {k: np.asarray(state[k], dtype=np.float64) for k in ("xtx", "xty", "yty", "n", "mass")}
        for k in ("xtx", "xty", "yty", "n"):
            if arrays[k].shape != getattr(self, k).shape:
                raise ValueError(f"env_effects.{k}: shape {arrays[k].shape}, expected {getattr(self, k).shape}")
        if arrays["mass"].ndim != 2 or arrays["mass"].shape[1] != self.num_envs:
            raise ValueError(f"env_effects.mass: shape {arrays['mass'].shape}, expected (steps + 1, {self.num_envs})")
        if not all(np.isfinite(a).all() for a in arrays.values()):
            raise ValueError("env_effects: non-finite values")
        start = int(state["start"])
        if not 0 <= start < arrays["mass"].shape[0]:
            raise ValueError(f"env_effects.start: {start} outside the {arrays['mass'].shape[0] - 1} updates saved")
        for k in ("xtx", "xty", "yty", "n"):
            setattr(self, k, arrays[k].copy())
        self.steps, self.start = arrays["mass"].shape[0] - 1, start
        self._mass = np.zeros((max(64, 2 * arrays["mass"].shape[0]), self.num_envs))
        self._mass[: self.steps + 1] = arrays["mass"]
