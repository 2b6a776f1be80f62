"""Schedulers over a family of drawn simulated worlds, plus the three named worlds as fixed points.

    python -m benchmarks.world_family                 # 24 drawn worlds x 3 seeds x 120 steps, + named worlds
    python -m benchmarks.world_family --quick         # 8 worlds x 2 seeds x 60 steps, no named worlds
    python -m benchmarks.world_family --workers 2 --json out.json --per-world
    python -m benchmarks.world_family --chance        # the same worlds, rewards partly or wholly by chance
    python -m benchmarks.world_family --mechanism clustered   # near-copies, interference, costly rollouts

Per world, every scheduler's seed-averaged held-out curve is compared with uniform's: `steps` is
the (linearly interpolated) first step at which it reaches uniform's final score, `ratio` =
horizon / steps, and `share` = (horizon - steps) / (horizon - oracle's steps) is the part of the
oracle's saving it realises (the oracle greedily takes the tasks with the largest true reward
variance; no scheduler can see that). The family table gives, per scheduler, the median and
quartiles of both over the drawn worlds; `below_best` counts the worlds on which envsched (or an
ablation) needs more steps than the best baseline (any mopps, plr, greso or sec row, at its defaults
or with options, on that world) by more than twice the seed noise of the paired per-seed
difference, and `worst_gap` is the largest ratio deficit to that baseline. `ms/step` is the
scheduler's select + update time, `x uniform` the ratio to random's in the same run. A
never-reached target counts as 2 x horizon steps.

`dapo [scheduler=NAME] [key=value ...]` is DAPO dynamic sampling (`run_dynamic_sampling`: whole
batches from the scheduler, uniform by default, until a batch of informative groups is full). It
pays for every discarded group, so its curve is put on the rollout axis before any comparison: its
"step" k is the point where it had spent k x batch x group rollouts, like every other row.

`--chance` gives every drawn world flaky verifiers (in 20-50% of its environments, 30-60% of the
tasks are a coin flip whatever the policy does) and stochastic environments (chance decides 20-50%
of their rollouts), and adds per scheduler the medians over worlds of `flaky_rollouts` (the share of
its rollouts spent on coin-flip tasks, known to the simulator only), `zero_var` (its zero-variance
group share: a coin flip wins it without teaching anything) and `gain/1k_rollouts` (held-out score
gained per 1,000 rollouts). The oracle ranks by learnable variance (none on a coin-flip task).
A coin-flip task's trajectory follows its coin by default (chance within the episode, as with a
stochastic simulated user); `--judge` casts the coins after the episode (a judge's verdict), so
the trajectory, and its length, is the policy's own: what envsched's `dependence` option reads.
`noise_told [key=value ...]` is envsched (with those options) told the share of each task's reward
the policy decides (`run_noise_told`): what perfect detection of reward noise would be worth, a
reference like the oracle.

`--mechanism clustered` draws worlds of the third mechanism (`simulation/clustered.py`): templates
plus near-copy clusters whose copies teach less together in one batch, environments whose training
lowers others' skills, forgetting, and rollouts of 1-30 turns at 50-800 tokens a turn. It adds
`token_ratio` (median and lower quartile): uniform's tokens up to its final score over the tokens a
row spends to reach it. Its oracle also knows the copies (a greedy fill that counts each further
copy of a cluster less) and the interference (each task weighed by what training its environment
does in all). A drawn world where uniform's held-out score does not rise is left out of the tables,
and the run says which.
"""

from __future__ import annotations

import argparse
import functools
import json
import multiprocessing as mp
import time
from pathlib import Path
from typing import Any

import numpy as np

from envsched_lightning.scheduling.registry import scheduler_names
from envsched_lightning.simulation import RunResult, run_dynamic_sampling, run_noise_told, run_oracle, run_scheduler
from envsched_lightning.simulation.family import MECHANISMS, build_world, describe, make_world_family, named_worlds
from envsched_lightning.simulation.report import format_table
from envsched_lightning.threads import set_torch_threads

BASELINES = ("mopps", "plr", "greso", "sec", "dapo")
REFERENCES = ("oracle", "dapo", "noise_told")  # rows that are not a registered scheduler
BATCH_SIZE, GROUP_SIZE = 32, 8  # tasks per step, rollouts per task
PREFIX = {"template": "w", "composed": "c", "clustered": "k"}  # a drawn world's key: this letter and its number
# the default rows; any "<scheduler> key=value ..." label runs that scheduler with those options
DEFAULT_LABELS = ("random", *BASELINES, "envsched", "envsched use_gnn=true", "envsched cross_edges=false",
                  "envsched coverage=0", "envsched gate=false", "envsched explore_untried=0.5", "oracle")  # fmt: skip


def parse_label(label: str) -> tuple[str, dict[str, Any]]:
    """"envsched coverage=0.45 quota=false" -> ("envsched", {"coverage": 0.45, "quota": False}).

    Values are read as JSON (numbers, true/false/null, quoted strings), else kept as text; the
    scheduler's own option checks reject a wrong name or value when the run starts. "oracle" is
    the reference ceiling, not a scheduler; "dapo" is dynamic sampling over the scheduler its
    `scheduler=` option names (random by default); "noise_told" is envsched told each task's
    share of learnable reward (a reference)."""
    name, *pairs = label.split()
    if name not in REFERENCES and name not in scheduler_names():
        raise ValueError(f"label {label!r}: unknown scheduler {name!r}; one of {sorted(scheduler_names())}, "
                         f"{' or '.join(REFERENCES)}")
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"label {label!r}: {pair!r} is not key=value")
        try:
            options[key] = json.loads(text)
        except json.JSONDecodeError:
            options[key] = text
    return name, options


@functools.lru_cache(maxsize=4)
def _world(key: str):
    return build_world(_CONFIGS[key])


_CONFIGS: dict = {}


def _init(configs: dict) -> None:
    _CONFIGS.update(configs)
    set_torch_threads(1)


def _job(args: tuple) -> tuple:
    key, label, seed, steps = args
    name, opts = parse_label(label)
    w = _world(key)
    if name == "oracle":
        res = run_oracle(w, seed, steps, BATCH_SIZE, GROUP_SIZE)
    elif name == "dapo":
        res = run_dynamic_sampling(w, seed, steps, BATCH_SIZE, GROUP_SIZE, label=label, **opts)
    elif name == "noise_told":
        res = run_noise_told(w, seed, steps, BATCH_SIZE, GROUP_SIZE, **opts)
    else:
        res = run_scheduler(w, name, seed, steps, BATCH_SIZE, GROUP_SIZE, label=label, **opts)
    spent = {"flaky": float(np.mean(res.flaky_share)), "zero_var": float(np.mean(res.zero_var)),
             "gain": res.gain_per_kilo_rollout()}  # fmt: skip
    tokens = [0.0, *res.tokens]
    if name == "dapo":  # its steps are put on the rollout axis; its tokens are not compared
        res, tokens = on_rollout_axis(res, steps, BATCH_SIZE * GROUP_SIZE), None
    return key, label, seed, res.scores, 1000 * float(np.mean(res.sched_seconds)), spent, tokens


def on_rollout_axis(res: RunResult, steps: int, per_step: int) -> RunResult:
    """`res`'s held-out curve read at every `per_step` rollouts (0 .. steps): a run that pays for
    more rollouts per step (dynamic sampling) compared at equal rollouts spent."""
    spent = np.asarray([0, *res.rollouts], dtype=np.float64) / per_step  # [steps + 1] in plain steps
    res.scores = np.interp(np.arange(steps + 1), spent, res.scores).tolist()
    return res


def steps_to(curve: np.ndarray, target: float, horizon: int) -> float:
    """Interpolated first step at which `curve` reaches `target`; 2 x horizon if never."""
    hit = np.flatnonzero(curve >= target)
    if not hit.size:
        return 2.0 * horizon
    k = int(hit[0])
    if k == 0:
        return 0.0
    lo, hi = curve[k - 1], curve[k]
    return k - 1 + float((target - lo) / max(hi - lo, 1e-12))


def world_rows(scores: dict[str, dict[int, list[float]]], horizon: int,
               tokens: dict[str, dict[int, list[float] | None]] | None = None) -> dict[str, dict]:
    """Per label: steps, ratio, share of the oracle's saving, per-seed steps (one world); with
    `tokens` (cumulative rollout tokens per step, 0 first), also `token_ratio`: the tokens uniform
    spends up to its final score over the tokens the row spends to reach it (at its interpolated
    step on its seed-mean token curve; never reached: twice its tokens at the horizon)."""
    uniform = scores["random"]

    def mean_curve(per_seed: dict[int, list[float]]) -> np.ndarray:
        return np.mean([per_seed[s] for s in sorted(per_seed)], 0)

    # the target is read off uniform's own mean curve, summed the same way as every curve, so
    # uniform reaches it at the horizon exactly (a mean taken in another order can differ in the
    # last bit and leave uniform "never" reaching its own score)
    target = float(mean_curve(uniform)[horizon])
    uniform_paid = float(mean_curve(tokens["random"])[horizon]) if tokens and tokens.get("random") else None
    out = {}
    for label, per_seed in scores.items():
        curve = mean_curve(per_seed)
        st = steps_to(curve, target, horizon)
        seeds = {s: steps_to(np.asarray(per_seed[s]), uniform[s][horizon], horizon) for s in per_seed if s in uniform}
        out[label] = {"steps": st, "ratio": horizon / max(st, 1e-9), "seed_steps": seeds,
                      "final": float(curve[horizon])}
        runs = (tokens or {}).get(label) or {}
        if runs and all(v is not None for v in runs.values()) and uniform_paid is not None:
            spent = mean_curve(runs)
            paid = 2.0 * spent[horizon] if st > horizon else float(np.interp(st, np.arange(horizon + 1), spent))
            out[label]["token_ratio"] = uniform_paid / max(paid, 1e-9)
    oracle = out.get("oracle", {"steps": 0.0})["steps"]
    for row in out.values():
        row["share"] = max(-1.0, (horizon - row["steps"]) / max(horizon - oracle, 1e-9))
    return out


def below_best(rows: dict[str, dict], label: str) -> tuple[bool, float]:
    """(needs more steps than the world's best baseline beyond 2 x paired seed noise, ratio gap)."""
    present = [x for x in rows if x.split()[0] in BASELINES]  # at their defaults or any tuned setting
    if not present or label not in rows:
        return False, 0.0
    best = min(present, key=lambda b: rows[b]["steps"])
    mine, theirs = rows[label]["seed_steps"], rows[best]["seed_steps"]
    d = np.array([mine[s] - theirs[s] for s in mine if s in theirs])
    se = float(d.std(ddof=1) / np.sqrt(d.size)) if d.size > 1 else 0.0
    gap = rows[label]["steps"] - rows[best]["steps"]
    return bool(gap > 0 and gap > 2 * se), rows[best]["ratio"] - rows[label]["ratio"]


def family_table(per_world: dict[str, dict[str, dict]], ms: dict[str, float],
                 spent: dict[str, dict[str, dict[str, float]]] | None = None) -> list[dict]:
    """Per label: ratio and share quartiles over the worlds; with `spent` (world -> label -> seed-mean
    rollout statistics), also the medians of the flaky-task rollout share, the zero-variance share and
    the held-out gain per 1,000 rollouts."""
    labels = list(next(iter(per_world.values())))
    table = []
    for label in labels:
        ratio = np.array([w[label]["ratio"] for w in per_world.values()])
        share = np.array([w[label]["share"] for w in per_world.values()])
        row = {"scheduler": label, "ratio_median": float(np.median(ratio)),
               "ratio_q25": float(np.quantile(ratio, 0.25)), "ratio_q75": float(np.quantile(ratio, 0.75)),
               "ratio_min": float(ratio.min()), "share_median": float(np.median(share)),
               "share_q25": float(np.quantile(share, 0.25)), "share_q75": float(np.quantile(share, 0.75))}
        if all("token_ratio" in w[label] for w in per_world.values()):
            token_ratio = np.array([w[label]["token_ratio"] for w in per_world.values()])
            row["token_ratio_median"] = float(np.median(token_ratio))
            row["token_ratio_q25"] = float(np.quantile(token_ratio, 0.25))
        if label.startswith(("envsched", "noise_told")):
            flags = [below_best(w, label) for w in per_world.values()]
            row["below_best"] = f"{sum(f for f, _ in flags)}/{len(flags)}"
            row["worst_gap"] = max(g for _, g in flags)
        else:
            row["below_best"], row["worst_gap"] = "-", "-"
        if spent:
            for key, column in (("flaky", "flaky_rollouts"), ("zero_var", "zero_var"), ("gain", "gain/1k_rollouts")):
                row[column] = float(np.median([spent[w][label][key] for w in per_world]))
        row["ms/step"] = ms.get(label, 0.0)
        row["x uniform"] = ms.get(label, 0.0) / max(ms.get("random", 1e-9), 1e-9)
        table.append(row)
    return table


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--worlds", type=int, default=24)
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--steps", type=int, default=120)
    p.add_argument("--family-seed", type=int, default=0)
    p.add_argument("--mechanism", choices=[*MECHANISMS, "both", "all"], default="template",
                   help="template: make_world's templated tasks (the default); composed: tasks compose skills; "
                   "clustered: templates plus near-copy clusters, environments that interfere and forget, and "
                   "rollouts of 1-30 turns (adds the ratio in tokens); both: template and composed, --worlds of "
                   "each, a table per mechanism and one over all; all: the three")  # fmt: skip
    p.add_argument("--chance", action="store_true", help="the same drawn worlds with flaky verifiers and stochastic "
                   "environments (rewards partly or wholly by chance); adds the rollout columns")  # fmt: skip
    p.add_argument("--judge", action="store_true", help="with --chance: the coin-flip verdicts are cast by a judge "
                   "after the episode, so a coin-flip task's trajectory is the policy's own (same draws)")  # fmt: skip
    p.add_argument("--quick", action="store_true", help="8 worlds x 2 seeds x 60 steps, no named worlds")
    p.add_argument("--no-named", action="store_true", help="skip the three named worlds")
    p.add_argument("--labels", nargs="*", default=None, help='rows, each "<scheduler> [key=value ...]" or "oracle"; default: ' + ", ".join(DEFAULT_LABELS))
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--per-world", action="store_true", help="also print one row per world")
    p.add_argument("--json", type=Path, default=None)
    a = p.parse_args(argv)
    if a.quick:
        a.worlds, a.seeds, a.steps, a.no_named = 8, 2, 60, True
    if a.judge and not a.chance:
        p.error("--judge needs --chance")
    labels = a.labels or list(DEFAULT_LABELS)
    for label in labels:
        parse_label(label)  # a typo fails here, not after the other runs
    labels = ["random"] + [x for x in labels if x != "random"]
    mechanisms = {"both": ["template", "composed"], "all": list(MECHANISMS)}.get(a.mechanism, [a.mechanism])
    configs = {f"{PREFIX[m]}{i:02d}": c for m in mechanisms
               for i, c in enumerate(make_world_family(a.worlds, a.family_seed, chance=a.chance, mechanism=m, judge=a.judge))}  # fmt: skip
    named = {} if a.no_named else named_worlds()
    configs.update(named)
    jobs = [(k, label, s, a.steps) for k in configs for label in labels for s in range(a.seeds)]
    print(f"{len(configs)} worlds ({a.worlds} drawn, family seed {a.family_seed}) x {len(labels)} schedulers x "
          f"{a.seeds} seeds x {a.steps} steps = {len(jobs)} runs, {a.workers} workers", flush=True)
    t0 = time.perf_counter()
    scores: dict[str, dict[str, dict[int, list[float]]]] = {k: {x: {} for x in labels} for k in configs}
    ms: dict[str, list[float]] = {x: [] for x in labels}
    if a.workers > 1:
        with mp.get_context("fork").Pool(a.workers, initializer=_init, initargs=(configs,)) as pool:
            results = list(pool.imap(_job, jobs, chunksize=1))
    else:
        _init(configs)
        results = [_job(j) for j in jobs]
    per_seed: dict[str, dict[str, list[dict]]] = {k: {x: [] for x in labels} for k in configs}
    tokens: dict[str, dict[str, dict[int, list[float] | None]]] = {k: {x: {} for x in labels} for k in configs}
    for key, label, seed, sc, t, spent, tok in results:
        scores[key][label][seed] = sc
        tokens[key][label][seed] = tok
        ms[label].append(t)
        per_seed[key][label].append(spent)
    spent_mean = {k: {x: {m: float(np.mean([d[m] for d in v[x]])) for m in ("flaky", "zero_var", "gain")} for x in v}
                  for k, v in per_seed.items()}  # fmt: skip
    wall = time.perf_counter() - t0
    rows = {k: world_rows(v, a.steps, tokens[k] if k[0] == PREFIX["clustered"] else None) for k, v in scores.items()}
    mean_ms = {x: float(np.mean(v)) for x, v in ms.items()}
    drawn = {k: v for k, v in rows.items() if k not in named}
    # a world where uniform's held-out score ends no higher than it began has no step at which a
    # scheduler "reaches uniform's final score" (every row would at step 0): left out, and said so
    flat = sorted(k for k in drawn if np.mean([scores[k]["random"][s][a.steps] - scores[k]["random"][s][0]
                                                for s in scores[k]["random"]]) <= 0)  # fmt: skip
    drawn = {k: v for k, v in drawn.items() if k not in flat}
    if flat:
        print(f"left out of the family tables: {len(flat)} drawn worlds where uniform's held-out score did not rise "
              f"({', '.join(flat)})")  # fmt: skip
    spent = spent_mean if a.chance else None
    out = {"family": family_table(drawn, mean_ms, spent) if drawn else [], "wall_s": wall}
    kind = " with flaky verifiers and stochastic environments" if a.chance else ""
    kind += " (coins cast by a judge after the episode)" if a.judge else ""
    if len(mechanisms) > 1 and drawn:
        for m in mechanisms:
            mine = {k: v for k, v in drawn.items() if k[0] == PREFIX[m]}
            out[f"family_{m}"] = family_table(mine, mean_ms, spent)
            print(format_table(out[f"family_{m}"], f"{m.capitalize()} mechanism: {len(mine)} drawn worlds{kind} "
                               f"({a.seeds} seeds, {a.steps} steps)"))  # fmt: skip
            print()
    if drawn:
        which = f"{len(mechanisms)} mechanisms, " if len(mechanisms) > 1 else f"{mechanisms[0]} mechanism, "
        print(format_table(out["family"], f"Family of {len(drawn)} drawn worlds ({which.strip(', ')})"
                           f"{kind} ({a.seeds} seeds, {a.steps} steps)"))  # fmt: skip
    if named:
        out["named"] = [{"world": k, **{x: rows[k][x]["ratio"] for x in labels}} for k in named]
        print()
        print(format_table(out["named"], "Named worlds: ratio (horizon / steps to uniform's final score)"))
    if a.per_world and drawn:
        out["per_world"] = [{"world": k, "tasks": len(_world_size(configs[k])), **{x: rows[k][x]["ratio"] for x in labels},
                             "knobs": describe(configs[k])} for k in drawn]
        print()
        print(format_table(out["per_world"], "Per drawn world: ratio"))
    print(f"\nwall time {wall:.0f} s")
    if a.json:
        a.json.write_text(json.dumps({**out, "rows": {k: {x: {kk: vv for kk, vv in r.items() if kk != "seed_steps"}
                                                           for x, r in v.items()} for k, v in rows.items()}}, indent=1))
    return out


def _world_size(cfg) -> list:
    return build_world(cfg).specs


if __name__ == "__main__":
    main()
