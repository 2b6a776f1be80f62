"""Entry point: `python evaluate.py [env=[...]] [model=... model_path=...] [ckpt_path=...] [rollout=vllm] [limit=N]`.

Runs a model greedily, one rollout per task, over whole environments (benchmark categories, built-in
worlds) with the chosen engine, and prints and saves a leaderboard: per category, per benchmark
(the mean of its categories) and overall (the mean of the benchmarks, as papers average BFCL-v3,
tau-bench and ACEBench; and the task-weighted mean), each with its task count. The rollouts and the
scores are `envsched_lightning.evaluation`'s, the same code the training run's validation uses.

Checkers run with their default `rules: official`; an environment configured with `rules=training`
is refused (`allow_training_rules=true` runs it and labels every output NOT OFFICIAL).
Writes under the run folder (`output_dir`, by default outputs/eval/DATE/TIME/): `scores.json`,
`scores.md`, `scores.csv`, and `outputs/<env>.jsonl` (per task: id, the model's turns, reward,
reason), which `python -m envsched_lightning.envs.score` re-scores offline.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

# first: importing train points TMPDIR at the repository's .tmp/ (PyG's generated code) unless set
from train import drop_unselected_envs  # isort: skip

import hydra  # noqa: E402
from hydra.utils import instantiate  # noqa: E402
from omegaconf import DictConfig, OmegaConf, open_dict  # noqa: E402

from envsched_lightning.config_errors import check_command_line, command_line_overrides  # noqa: E402
from envsched_lightning.console import RunConfigError, config_errors_exit, quiet_known_noise  # noqa: E402
from envsched_lightning.run_config import (  # noqa: E402, F401 - PLAIN: a public name
    PLAIN, check_plain, has_interpolation, read_run_config, run_config_path,
)  # fmt: skip
from envsched_lightning.threads import set_torch_threads  # noqa: E402


def training_rules(cfg: DictConfig) -> list[str]:
    """`env.<name>.rules=...` values other than official, refused unless `allow_training_rules`."""
    found = [f"env.{name}.rules={node.rules}" for name, node in cfg.env.items() if node.get("rules", "official") != "official"]
    if found and not cfg.get("allow_training_rules", False):
        raise RunConfigError(f"{', '.join(found)}: training rules give rewards, not benchmark scores (docs/benchmarks.md); "
                         "evaluate with rules=official, or set allow_training_rules=true to get a labelled, unofficial table")  # fmt: skip
    return found


def not_played_notice(episodes: Sequence[Any], max_seq_len: int, max_new_tokens: int) -> str | None:
    """What to change when some episodes were never played (their prompt left no room to generate):
    how many, in which environments, and the `model.grpo.max_seq_len` that fits the longest prompt."""
    from envsched_lightning.evaluation import PROMPT_TOO_LONG

    skipped = [e for e in episodes if e.reason.startswith(PROMPT_TOO_LONG)]
    if not skipped:
        return None
    lengths = [int(m.group(1)) for e in skipped if (m := re.search(r"(\d+) tokens", e.reason))]
    envs = sorted({e.env for e in skipped})
    need = f"model.grpo.max_seq_len={max(lengths) + max_new_tokens} plays them all" if lengths else "raise model.grpo.max_seq_len"
    return (f"warning: {len(skipped)} of {len(episodes)} tasks not played ({', '.join(envs)}): their prompts are longer than "
            f"model.grpo.max_seq_len - model.sampling.max_new_tokens = {max_seq_len - max_new_tokens} tokens; scored 0 "
            f"(reason '{PROMPT_TOO_LONG}') and no suite score is shown for them; {need}")  # fmt: skip


def users_played(envs: Mapping[str, Any], paper_users: str) -> list[str]:
    """One line per simulated user that played, naming its environments, next to the paper's users."""
    played: dict[str, list[str]] = {}
    for name, env in envs.items():
        if (settings := getattr(env, "simulated_user", None)) is not None:
            played.setdefault(settings.describe(), []).append(name)
    return [f"simulated user of {', '.join(names)}: {who}" + (f"; {paper_users}" if paper_users else "")
            for who, names in played.items()]  # fmt: skip


def check_limit(limit: Any) -> int | None:
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise RunConfigError(f"limit must be a positive int (tasks per environment) or null, got {limit!r}")
    return limit


POLICY_BUILDERS = ("envsched_lightning.models.tiny_qwen3_policy", "envsched_lightning.models.load_pretrained_qwen3",
                   "envsched_lightning.models.load_pretrained_policy")  # fmt: skip


def known_env_targets(cfg: DictConfig) -> set[str]:
    """Environment classes a run's policy may name (the tiny tokenizer's corpus): conf/env/ and this config's."""
    found = {str(node["_target_"]) for node in (cfg.get("env") or {}).values() if "_target_" in node}
    for file in (Path(__file__).resolve().parent / "conf" / "env").glob("*.yaml"):
        node = OmegaConf.load(file)
        if isinstance(node, DictConfig) and "_target_" in node:
            found.add(str(node["_target_"]))
    return found


def check_run_policy(policy: Any, source: str, env_targets: set[str]) -> None:
    """Refuse, by key, anything in a run's `model.policy` but a known builder with plain values.

    The file lies next to a checkpoint that may come from anywhere: instantiating it as it stands
    would call whatever `_target_` it names (`torch.load`, `builtins.open`, ...). Allowed: the top
    `_target_` among POLICY_BUILDERS; `_target_` of the tiny model's `envs` entries among the known
    environment classes; every other value a number, string, bool, null, list or mapping of them."""
    if not isinstance(policy, dict):
        raise RunConfigError(f"{source}: model.policy is a {type(policy).__name__}, not a mapping; refused")
    if policy.get("_target_") not in POLICY_BUILDERS:
        shown = "an interpolation" if has_interpolation(policy.get("_target_")) else repr(policy.get("_target_"))[:120]
        raise RunConfigError(f"{source}: model.policy._target_={shown} is not a known policy builder "
                         f"({', '.join(POLICY_BUILDERS)}); refused")  # fmt: skip

    def target_ok(node: str, target: Any) -> bool:  # the builder itself, or one of the tiny model's envs
        return node == "model.policy" or (re.fullmatch(r"model\.policy\.envs\[\d+\]", node) is not None and target in env_targets)

    check_plain(policy, "model.policy", source, target_ok,
                "only the policy builder and known environment classes (the tiny tokenizer's envs) may be named")  # fmt: skip


def run_held_out(cfg: DictConfig) -> tuple[list[tuple[Any, Any]], dict[str, Any], str]:
    """`split=held_out`: the (task, environment) pairs the checkpoint's run held out, built as that run
    built them (its env and data.eval_envs from its config_resolved.yaml, its eval_per_env and
    eval_env_tasks), so the scores cover no task the run trained on. Returns (pairs, envs, source)."""
    from datamodules.task_pool import build_pool

    if not cfg.get("ckpt_path"):
        raise RunConfigError("split=held_out: the held-out tasks are a run's; set ckpt_path=<run>/checkpoints/last.ckpt")
    source = run_config_path(cfg.ckpt_path)
    if not source.is_file():
        raise RunConfigError(f"split=held_out: no {source} (the run's config says which tasks it held out)")
    run = read_run_config(source)
    data = run.get("data") if isinstance(run.get("data"), dict) else {}
    nodes = {"env": run.get("env") or {}, "data.eval_envs": data.get("eval_envs") or {}}
    known = known_env_targets(cfg)
    built: dict[str, dict[str, Any]] = {}
    for group, entries in nodes.items():
        if not isinstance(entries, dict):
            raise RunConfigError(f"{source}: {group} is a {type(entries).__name__}, not a mapping; refused")
        plain = {name: node for name, node in entries.items() if isinstance(node, dict) and "_target_" in node}
        check_plain(plain, group, str(source), lambda node, target: node.count(".") == group.count(".") + 1 and target in known,
                    "only known environment classes (conf/env/) may be named")  # fmt: skip
        built[group] = {name: instantiate(node) for name, node in plain.items()}
    try:  # the DataModule's own checks: a count it refuses cannot say which tasks the run held out
        pool = build_pool(built["env"], data.get("eval_per_env", 4), built["data.eval_envs"], data.get("eval_env_tasks", 32))
    except ValueError as err:
        raise RunConfigError(f"{source}: {err}") from None
    return [(task, env) for task, env in pool.held_out], built["env"] | built["data.eval_envs"], str(source)


def use_run_policy(cfg: DictConfig) -> str | None:
    """Build the checkpoint's model as its run built it: `model.policy` from the run's config_resolved.yaml.

    The tiny model's tokenizer is trained on the run's environments, so only the run's config can
    rebuild it; LoRA settings and the architecture must match too. `path` (where base weights live
    on this machine) stays this config's. The file is checked first (`check_run_policy`): only
    known builders with plain values. Returns the file used, or None when there is none."""
    run_config = run_config_path(cfg.ckpt_path)
    if not run_config.is_file():
        return None
    model = read_run_config(run_config).get("model")
    run_policy = model.get("policy") if isinstance(model, dict) else None
    if run_policy is None:
        return None
    check_run_policy(run_policy, str(run_config), known_env_targets(cfg))
    if run_policy.get("_target_") != cfg.model.policy.get("_target_"):
        raise RunConfigError(f"ckpt_path={cfg.ckpt_path} was written by a run whose model.policy is {run_policy.get('_target_')} "
                         f"({run_config}), but this config builds {cfg.model.policy.get('_target_')}: choose that model= group")  # fmt: skip
    if run_policy["_target_"] == TINY_BUILDER:  # sizes from the file: checked against the tensors before any is built
        check_tiny_sizes(run_policy, cfg.ckpt_path, str(run_config))
    with open_dict(cfg):
        if "path" in cfg.model.policy:
            run_policy["path"] = cfg.model.policy.path
        cfg.model.policy = run_policy
    return str(run_config)


TINY_BUILDER = "envsched_lightning.models.tiny_qwen3_policy"
_NOT_SIZES = {"_target_", "envs", "vocab_size", "seed", "lora", "gradient_checkpointing"}


def _module_key(key: str) -> tuple[str, str]:
    """A checkpoint key as (base model parameter or module name, what it is): weight, lora_A or lora_B."""
    key = key.removeprefix("model.").removeprefix("base_model.model.").replace(".base_layer.", ".")
    for part in ("lora_A", "lora_B"):
        if f".{part}." in key:
            return key.split(f".{part}.")[0], part
    return key, "weight"


def check_tiny_sizes(policy: Mapping[str, Any], ckpt_path: str, source: str) -> None:
    """Refuse a run config whose tiny-model sizes do not fit the checkpoint's tensors, before the model is built.

    The sizes come from a file beside the checkpoint: a forged `hidden_size` or `num_hidden_layers` would
    allocate without bound. The layer count is compared first, then the model is built on the meta device
    (no memory) and every tensor of the checkpoint, full or LoRA, must have the shape that model gives it."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    from envsched_lightning.checkpoints import read_checkpoint
    from envsched_lightning.models.qwen3 import TINY_QWEN3

    shapes = {k: tuple(v.shape) for k, v in read_checkpoint(ckpt_path, mmap=True)["state_dict"].items()}
    sizes = {**TINY_QWEN3, **{k: v for k, v in policy.items() if k not in _NOT_SIZES}}
    layers = {int(m.group(1)) for k in shapes if (m := re.search(r"\.layers\.(\d+)\.", k))}
    if layers and sizes.get("num_hidden_layers") != max(layers) + 1:
        raise RunConfigError(f"{source}: model.policy.num_hidden_layers={sizes.get('num_hidden_layers')!r} but "
                             f"ckpt_path={ckpt_path} holds {max(layers) + 1} layers; refused")  # fmt: skip
    try:
        with torch.device("meta"):
            model = Qwen3ForCausalLM(Qwen3Config(vocab_size=int(policy.get("vocab_size", 2048)), **sizes))
    except Exception as err:  # noqa: BLE001 - a config transformers refuses
        raise RunConfigError(f"{source}: model.policy does not build a Qwen3 ({type(err).__name__}: {str(err)[:200]}); refused") from None
    params = {n: tuple(p.shape) for n, p in model.named_parameters()}
    for key, shape in shapes.items():
        name, kind = _module_key(key)
        base = params.get(name if kind == "weight" else f"{name}.weight")
        if base is None:
            raise RunConfigError(f"{source}: ckpt_path={ckpt_path} holds {key}, which model.policy's sizes do not build; refused")
        vocab = "embed_tokens" in name or "lm_head" in name  # the tokenizer's length: at most vocab_size
        fits = (shape[-1:] == base[-1:] and shape[0] <= base[0] if vocab and kind == "weight" else shape == base if kind == "weight"
                else shape[1] == base[1] if kind == "lora_A" else shape[0] == base[0])  # fmt: skip
        if not fits:
            raise RunConfigError(f"{source}: model.policy's sizes give {name} the shape {base}, but ckpt_path={ckpt_path} "
                                 f"holds {key} of shape {shape}; refused")  # fmt: skip


def load_weights(module: Any, path: str) -> str:
    """The checkpoint's weights into `module`; a LoRA checkpoint may lack only the frozen base weights."""
    from envsched_lightning.checkpoints import read_checkpoint

    state = read_checkpoint(path)["state_dict"]
    try:
        missing, unexpected = module.load_state_dict(state, strict=False)
    except RuntimeError as err:  # shape mismatches
        raise RunConfigError(f"ckpt_path={path} does not fit this model (another model config?): {str(err)[:400]}") from None
    frozen = {f"model.{n}" for n, p in module.model.named_parameters() if not p.requires_grad}
    lost = [k for k in missing if k not in frozen]
    if unexpected or lost:
        raise RunConfigError(f"ckpt_path={path} does not fit this model (another model config or LoRA setting?): "
                         f"{len(unexpected)} unexpected weights {unexpected[:3]}, {len(lost)} missing {lost[:3]}")  # fmt: skip
    kind = "adapter" if missing else "full model"
    return f"{len(state)} tensors ({kind})"


def write_outputs(out_dir: Path, header: str, scores: Any, episodes: list, meta: dict[str, Any]) -> dict[str, str]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"json": out_dir / "scores.json", "markdown": out_dir / "scores.md", "csv": out_dir / "scores.csv"}
    paths["json"].write_text(json.dumps(meta | {"scores": scores.as_dict()}, indent=2))
    paths["markdown"].write_text(f"{header}\n\n{scores.markdown()}\n")
    paths["csv"].write_text(scores.csv())
    per_env: dict[str, list[str]] = {}
    for e in episodes:
        turns = [m["content"] for m in e.messages if m["role"] == "assistant"]
        record = {"id": e.task_key.removeprefix(f"{e.env}/"), "env": e.env, "turns": turns, "reward": e.reward,
                  "reason": e.reason, "truncated": e.truncated} | ({"scores": dict(e.scores)} if e.scores else {})  # fmt: skip
        per_env.setdefault(e.env, []).append(json.dumps(record) + "\n")
    (out_dir / "outputs").mkdir(exist_ok=True)
    for env, lines in per_env.items():
        (out_dir / "outputs" / f"{env}.jsonl").write_text("".join(lines))
    return {k: str(v) for k, v in paths.items()} | {"outputs": str(out_dir / "outputs")}


def evaluate(cfg: DictConfig) -> dict[str, Any]:
    quiet_known_noise()
    set_torch_threads(cfg.get("torch_threads"))
    import torch

    from envsched_lightning.evaluation import (
        aggregate, benchmark_metrics, greedy_rollouts, metrics_markdown, paper_markdown, paper_score, unplayed_tasks,
    )
    from envsched_lightning.leaderboard import bfcl_overall
    from envsched_lightning.rollout import HFEngine

    drop_unselected_envs(cfg)
    if not cfg.get("env"):
        raise RunConfigError("env: no environment selected (env=[bfcl_simple,...])")
    limit = check_limit(cfg.get("limit"))
    split = cfg.get("split", "all")
    if split not in ("all", "held_out"):
        raise RunConfigError(f"split={split!r}: expected all (every task of env) or held_out (the ckpt_path run's held-out tasks)")
    unofficial = training_rules(cfg) if split == "all" else []  # before any environment is built
    torch.manual_seed(cfg.seed)
    t0 = time.perf_counter()
    if split == "held_out":
        pairs, envs, split_source = run_held_out(cfg)
        pairs = [p for env in envs.values() for p in [q for q in pairs if q[1] is env][:limit]]
        print(f"split=held_out: {len(pairs)} tasks the run held out ({split_source})")
        unofficial = [f"env.{n}.rules=training" for n, e in envs.items() if getattr(e, "rules", "official") == "training"]
    else:
        envs = {name: instantiate(node) for name, node in cfg.env.items()}
        pairs = [(task, env) for env in envs.values() for task in env.tasks()[:limit]]
    run_config = use_run_policy(cfg) if cfg.get("ckpt_path") else None
    if cfg.get("ckpt_path") and run_config is None:
        print(f"warning: no config_resolved.yaml two folders above ckpt_path={cfg.ckpt_path}: the model is built from this "
              "config, which must match the run's (the tiny model's tokenizer is trained on the run's environments)")  # fmt: skip
    module = instantiate(cfg.model)
    loaded = load_weights(module, cfg.ckpt_path) if cfg.get("ckpt_path") else None
    device = cfg.get("device", "auto")
    if isinstance(module.engine, HFEngine):  # vLLM serves its own copy; the HF model only saves adapters
        module.to("cuda" if device == "auto" and torch.cuda.is_available() else "cpu" if device == "auto" else device)
    module.eval()
    module.engine.sync_weights(module.model)
    print(f"evaluating {len(pairs)} tasks in {len(envs)} environments ({time.perf_counter() - t0:.0f} s to load)"
          + (f"; weights from {cfg.ckpt_path}: {loaded}" + (f", model.policy from {run_config}" if run_config else "") if loaded else ""),
          flush=True)  # fmt: skip
    t1 = time.perf_counter()

    def progress(done: int, total: int) -> None:
        print(f"  {done}/{total} tasks ({time.perf_counter() - t1:.0f} s)", flush=True)

    episodes = greedy_rollouts(module.engine, module.tokenizer, pairs, module.sampling, batch_size=cfg.batch_size,
                               progress=progress, **module.loop_kwargs)  # fmt: skip
    rollout_s = time.perf_counter() - t1
    scores = aggregate((e.env, e.reward) for e in episodes)
    if notice := not_played_notice(episodes, module.loop_kwargs["max_seq_len"], module.sampling.max_new_tokens):
        print(notice)
    label = f"NOT OFFICIAL ({', '.join(unofficial)}): " if unofficial else ""
    model_name = cfg.ckpt_path or cfg.model.policy.get("path") or cfg.model.policy._target_.rsplit(".", 1)[-1]
    header = (f"{label}greedy, 1 rollout per task{f', first {limit} tasks per environment' if limit else ''}; "
              f"model {model_name}; engine {type(module.engine).__name__}; checkers: "
              f"{'see the label' if unofficial else 'rules=official'}")  # fmt: skip
    meta = {"official": not unofficial, "unofficial_rules": unofficial, "limit": limit, "model": str(model_name),
            "ckpt_path": cfg.get("ckpt_path"), "engine": type(module.engine).__name__,
            "max_new_tokens": module.sampling.max_new_tokens, "rollout_seconds": rollout_s,
            "rules": {name: getattr(env, "rules", "official") for name, env in envs.items()}}  # fmt: skip
    board = bfcl_overall({e.env: (e.score, e.tasks) for e in scores.envs}, {n: len(env.tasks()) for n, env in envs.items()})
    extra = ""
    if board is not None:  # the leaderboard's own overall, next to our means
        versions = sorted({getattr(env, "version", "?") for n, env in envs.items() if n.startswith("bfcl_")})
        meta["bfcl_leaderboard"] = board.as_dict() | {"data": versions}
        extra = (f"\n\nBFCL overall as the leaderboard computes it (bfcl-eval 2026.3.23's weights; data "
                 f"{'/'.join(versions)}):\n\n{board.markdown()}")  # fmt: skip
    if official_metrics := benchmark_metrics(episodes):  # e.g. ACEBench-Agent's end-state and process accuracy
        meta["benchmark_metrics"] = official_metrics
        extra += f"\n\nThe benchmarks' own metrics (mean per environment):\n\n{metrics_markdown(official_metrics)}"
    if cfg.get("paper"):  # experiment=paper_eval: the paper's suites and their average
        paper = paper_score(scores, dict(cfg.paper.suites), unplayed_tasks(episodes))
        differences = [*users_played(envs, cfg.paper.get("users", "")), *cfg.paper.get("differences", [])]
        meta["paper"] = {"suites": dict(paper.suites), "average": paper.average, "complete": paper.complete,
                         "not_played": {name: [n, total] for name, n, total in paper.not_played},
                         "differences": differences}  # fmt: skip
        extra += ("\n\nThe paper's evaluation (each suite the mean of its categories, x100):\n\n"
                  + paper_markdown(paper, cfg.paper.get("reference", ""), differences))  # fmt: skip
    paths = write_outputs(Path(cfg.output_dir), header, scores, episodes, meta)
    if extra:
        with open(paths["markdown"], "a") as fh:
            fh.write(extra.lstrip("\n") + "\n")
    print(f"\n{header}\n\n{scores.markdown()}{extra}\n")
    print(f"rollouts: {rollout_s:.0f} s; results: {paths['markdown']} (also scores.json, scores.csv, outputs/<env>.jsonl)")
    return {"scores": scores, "episodes": episodes, "paths": paths, "official": not unofficial, "module": module}


@hydra.main(version_base="1.3", config_path="conf", config_name="evaluate")
def main(cfg: DictConfig) -> None:
    with config_errors_exit():  # a setting the run cannot start with: its message, no traceback
        evaluate(cfg)


if __name__ == "__main__":
    with config_errors_exit():  # Hydra composes inside main(): an unknown option or key is named here first
        overrides = command_line_overrides(sys.argv[1:])
        if overrides is not None:
            check_command_line(Path(__file__).resolve().parent / "conf", "evaluate", overrides)
    main()
