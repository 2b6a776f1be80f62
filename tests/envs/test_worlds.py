"""Contract tests every built-in world must pass: the oracle scores 1.0, wrong actions score less,
episodes are isolated, schemas are function docs, TaskSpecs tell the truth, generation is seeded."""

from __future__ import annotations

import json
from collections import Counter

from hydra import compose, initialize_config_dir
from hydra.utils import instantiate

from envsched_lightning.envs import PATTERNS, ToolCall, make_env, oracle_turns, render_assistant_turn, run_scripted
from envsched_lightning.envs.patterns import calls_of
from envsched_lightning.envs.registry import builtin_env_names
from envsched_lightning.envs.world_checks import changed_value

JSON_TYPES = {"string", "integer", "number", "boolean", "array", "object", "null"}


def test_every_builtin_world_has_a_yaml_named_after_it(package_yaml_paths, builtin_yaml_paths):
    assert builtin_env_names(), "no built-in worlds registered"
    assert sorted(p.stem for p in package_yaml_paths) == builtin_env_names()
    assert [p.stem for p in builtin_yaml_paths] == ["airline", "banking", "calendar", "filesystem", "messaging",
                                                     "retail_orders"]  # the shipped ones  # fmt: skip


def test_hydra_selects_several_worlds_at_once(builtin_yaml_paths):
    names = [p.stem for p in builtin_yaml_paths]
    with initialize_config_dir(config_dir=str(builtin_yaml_paths[0].parents[1]), version_base="1.3"):
        cfg = compose(overrides=[f"+env=[{','.join(names)}]", *(f"env.{n}.num_tasks=3" for n in names)])
    envs = {n: instantiate(c) for n, c in cfg.env.items()}
    assert list(envs) == names
    assert all(e.name == n and len(e.tasks()) == 3 for n, e in envs.items())


def test_yaml_builds_the_registered_world(world):
    assert world.name in builtin_env_names()
    assert type(world) is type(make_env(world.name, num_tasks=1))
    assert len(world.tasks()) >= 200


def test_oracle_scores_exactly_one(world):
    for task in world.tasks():
        verdict, results = run_scripted(world, task, oracle_turns(task))
        assert verdict.reward == 1.0, (task.spec.key, verdict)
        assert all(r.error is None for turn in results for r in turn), (task.spec.key, results)


def test_wrong_actions_score_less(world):
    for task in world.tasks():
        nothing, _ = run_scripted(world, task, ["OK."])
        assert nothing.reward < 1.0, (task.spec.key, nothing)
        gt = task.ground_truth
        if not (gt["expected_changes"] or "calls" in gt["checks"]):
            continue
        turns = calls_of(gt)
        last = turns[-1][-1]
        key = next(k for k, v in last.arguments.items() if changed_value(v) is not None)
        turns[-1][-1] = ToolCall(last.name, {**last.arguments, key: changed_value(last.arguments[key])})
        wrong, _ = run_scripted(world, task, [render_assistant_turn("", t) for t in turns] + [gt["answer"]])
        assert wrong.reward < 1.0, (task.spec.key, key, wrong)


def test_episodes_do_not_share_state(world):
    task = next(t for t in world.tasks() if t.ground_truth["expected_changes"])
    before = json.dumps(world.initial_state(), sort_keys=True)
    first, _ = run_scripted(world, task, oracle_turns(task))
    idle = world.reset(task)
    second, _ = run_scripted(world, task, oracle_turns(task))  # a shared state would apply the writes twice
    assert first.reward == second.reward == 1.0
    assert idle.verify(task.ground_truth["answer"]).reward < 1.0  # nothing was done in this episode
    assert json.dumps(world.initial_state(), sort_keys=True) == before


def test_tool_schemas_are_function_docs(world):
    names = []
    for doc in world.tool_schemas():
        assert doc["type"] == "function" and set(doc) == {"type", "function"}
        fn = doc["function"]
        assert isinstance(fn["name"], str) and fn["name"].isidentifier()
        assert isinstance(fn["description"], str) and fn["description"]
        params = fn["parameters"]
        assert params["type"] == "object" and isinstance(params["properties"], dict)
        assert set(params["required"]) <= set(params["properties"])
        for prop in params["properties"].values():
            assert prop["type"] in JSON_TYPES
            assert "enum" not in prop or isinstance(prop["enum"], list)
        json.dumps(doc)
        names.append(fn["name"])
    assert len(names) == len(set(names)) and 4 <= len(names) <= 10


def test_task_specs_are_truthful(world):
    schemas = {d["function"]["name"] for d in world.tool_schemas()}
    tables = set(world.initial_state())
    ids = [t.spec.task_id for t in world.tasks()]
    assert len(ids) == len(set(ids))
    for task in world.tasks():
        spec, gt = task.spec, task.ground_truth
        calls = [c for turn in calls_of(gt) for c in turn]
        offered = {d["function"]["name"] for d in world.tools_for(task)}
        assert spec.env == world.name
        assert {c.name for c in calls} <= set(spec.tools) <= offered <= schemas
        assert spec.state_keys and set(spec.state_keys) <= tables
        assert set(gt["expected_changes"]) <= set(spec.state_keys)
        assert spec.reward_type in ("binary", "continuous")
        assert spec.features[f"pattern_{gt['pattern']}"] == 1.0
        assert sum(spec.features[f"pattern_{p}"] for p in PATTERNS) == 1.0
        assert spec.features["n_calls"] == len(calls)
        assert spec.features["n_turns_expected"] == len(oracle_turns(task))
        assert task.messages[-1]["role"] == "user"
        assert len(task.messages[-1]["content"].split()) < 60


def test_tool_results_are_short(world):
    for task in world.tasks()[:60]:
        _, results = run_scripted(world, task, oracle_turns(task))
        for r in (r for turn in results for r in turn):
            assert len(r.content.split()) < 60, (task.spec.key, r.content)


def test_other_seeds_build_and_solve(world):
    for seed in range(1, 6):
        env = type(world)(num_tasks=60, seed=seed)
        for task in env.tasks():
            assert run_scripted(env, task, oracle_turns(task))[0].reward == 1.0, (seed, task.spec.key)


def test_generation_is_deterministic_per_seed(world):
    def key(env):
        return [(t.spec, t.messages, json.dumps(t.ground_truth, sort_keys=True), t.tools) for t in env.tasks()]

    cls = type(world)
    assert key(cls(num_tasks=40, seed=3)) == key(cls(num_tasks=40, seed=3))
    assert key(cls(num_tasks=40, seed=3)) != key(cls(num_tasks=40, seed=4))
    assert key(cls(num_tasks=20, seed=3)) == key(cls(num_tasks=40, seed=3))[:20]


def test_patterns_and_features_recur_across_worlds(all_worlds):
    assert len(all_worlds) >= 6
    feature_keys = {tuple(sorted(t.spec.features)) for w in all_worlds for t in w.tasks()}
    assert len(feature_keys) == 1, "every world must describe tasks with the same feature keys"
    per_pattern = Counter(p for w in all_worlds for p in {t.ground_truth["pattern"] for t in w.tasks()})
    assert all(per_pattern[p] >= 2 for p in PATTERNS), per_pattern
    verifiers = Counter(v for w in all_worlds for v in {t.spec.verifier for t in w.tasks()})
    assert any(n >= 2 for n in verifiers.values())
