"""`TaskTable`: task specs as columns behind the `Sequence[TaskSpec]` the schedulers take, and the
graph machinery that reads them without a Python object per task."""

import json
import math
import zlib

import numpy as np
import pytest

from envsched_lightning.scheduling import RolloutGroup, TaskSpec, build_scheduler
from envsched_lightning.scheduling.base import spec_fingerprint
from envsched_lightning.scheduling.features import NUM_DIM, RT_DIM, SET_DIM, STATIC_DIM, static_features
from envsched_lightning.scheduling.similarity import TopK
from envsched_lightning.scheduling.task_table import TaskTable


def pool() -> list[TaskSpec]:
    return [
        TaskSpec("bank", "a", tools=("pay", "look", "pay"), state_keys=("acct",), verifier="state", features={"n": 2.0}),
        TaskSpec("bank", "b", tools=(), verifier="", features={"n": -0.5, "deep": 1e-3}, reward_type="continuous"),
        TaskSpec("cal", "a", tools=("book",), state_keys=("events", "acct"), verifier="exact"),
        TaskSpec("cal", "c/d", tools=("book", "ask"), features={}),
    ]


def test_every_constructor_gives_the_same_specs_and_the_fingerprint_of_the_list(tmp_path):
    specs = pool()
    rows = [{"env": s.env, "task_id": s.task_id, "tools": list(s.tools), "state_keys": list(s.state_keys),
             "verifier": s.verifier, "features": dict(s.features), "reward_type": s.reward_type} for s in specs]  # fmt: skip
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    columns = TaskTable.from_columns(
        env=[s.env for s in specs], task_id=[s.task_id for s in specs], tools=[s.tools for s in specs],
        state_keys=[s.state_keys for s in specs], verifier=[s.verifier for s in specs],
        features={"n": [2.0, -0.5, None, float("nan")], "deep": [None, 1e-3, None, None]},
        reward_type=[s.reward_type for s in specs],
    )  # fmt: skip
    for table in (TaskTable.from_specs(specs), TaskTable.from_rows(rows), TaskTable.from_jsonl(path), columns):
        assert len(table) == 4 and list(table) == specs and table[-1] == specs[-1]
        assert table.fingerprint() == spec_fingerprint(specs) == spec_fingerprint(table)
        assert table.key_pairs() == [(s.env, s.task_id) for s in specs] and table.task_id(3) == "c/d"
    assert TaskTable.from_specs(specs).nbytes() < 400  # four tasks, a few arrays


@pytest.mark.parametrize(("rows", "match"), [
    ([{"env": "e", "task_id": "a"}, {"env": "e", "task_id": "a"}], "duplicate task 'e/a'"),
    ([{"env": "e", "task_id": ""}], "task 0: task_id must be a non-empty string"),
    ([{"env": "", "task_id": "a"}], "task 0: env must be a non-empty string"),
    ([{"env": "e", "task_id": "a", "features": {"x": math.inf}}], r"e/a: non-finite features \['x'\]"),
    ([{"env": "e", "task_id": "a", "tool": ["t"]}], r"row 0: unknown field\(s\) \['tool'\]"),
])  # fmt: skip
def test_malformed_rows_are_refused_with_the_row_or_task_named(rows, match):
    with pytest.raises(ValueError, match=match):
        TaskTable.from_rows(rows)


def test_a_malformed_jsonl_line_names_the_file_and_line(tmp_path):
    path = tmp_path / "tasks.jsonl"
    path.write_text('{"env": "e", "task_id": "a"}\n{"env": "e", task_id: "b"}\n')
    with pytest.raises(ValueError, match=rf"{path}:2: not a JSON object"):
        TaskTable.from_jsonl(path)
    path.write_text('{"env": "e", "task_id": "a"}\n{"env": "e", "task_id": "a"}\n')
    with pytest.raises(ValueError, match=rf"{path}: duplicate task 'e/a'"):
        TaskTable.from_jsonl(path)


def reference_static_features(specs: list[TaskSpec]) -> np.ndarray:
    """The definition, one task at a time: hashed tool / state / verifier names scaled by
    1/sqrt(count), hashed signed log features, the reward type's slot, log(1 + tools) / 3."""
    x = np.zeros((len(specs), STATIC_DIM), dtype=np.float32)

    def slot(name: str, dim: int) -> tuple[int, float]:
        h = zlib.crc32(name.encode())
        return h % dim, 1.0 if (h >> 16) & 1 else -1.0

    for i, s in enumerate(specs):
        names = [f"t:{t}" for t in s.tools] + [f"s:{k}" for k in s.state_keys] + [f"v:{s.verifier}"]
        for name in names:
            j, sign = slot(name, SET_DIM)
            x[i, j] += sign / math.sqrt(len(names))
        for name, v in s.features.items():
            j, sign = slot(f"f:{name}", NUM_DIM)
            x[i, SET_DIM + j] += sign * math.copysign(math.log1p(abs(v)), v)
        j, sign = slot(f"r:{s.reward_type}", RT_DIM)
        x[i, SET_DIM + NUM_DIM + j] = sign
        x[i, -1] = math.log1p(len(s.tools)) / 3.0
    return x


def test_static_features_from_columns_equal_the_per_task_definition_bit_for_bit():
    from envsched_lightning.simulation.family import build_world, make_world_family

    for specs in (pool(), build_world(make_world_family(1, 0, mechanism="composed")[0]).specs):
        np.testing.assert_array_equal(static_features(TaskTable.from_specs(specs)), reference_static_features(specs))


@pytest.mark.parametrize("name", ["random", "mopps", "plr", "greso", "sec", "envsched"])
def test_a_scheduler_over_a_table_selects_what_it_selects_over_the_list(name):
    from envsched_lightning.simulation import make_world

    specs = make_world("default").specs
    table = TaskTable.from_specs(specs)
    a, b = build_scheduler(name, specs, seed=1), build_scheduler(name, table, seed=1)
    assert type(a.specs) is TaskTable and a.env_names == b.env_names
    rng = np.random.default_rng(0)
    for _ in range(4):
        pick = a.select(16)
        assert b.select(16) == pick
        groups = [RolloutGroup(i, tuple(float(x) for x in rng.random(4) < 0.5)) for i in pick]
        a.update(groups)
        b.update(groups)
    assert a.last_decision().rows == b.last_decision().rows
    assert a.last_decision().rows[0]["task_id"] == specs[a.last_decision().indices[0]].task_id


def test_top_k_keeps_each_nodes_strongest_and_breaks_ties_the_same_whatever_the_arrival_order():
    rng = np.random.default_rng(0)
    n, k = 200, 4
    a, b = rng.integers(0, n, 3000), rng.integers(0, n, 3000)
    w = ((np.minimum(a, b) * 7 + np.maximum(a, b) * 13) % 5 / 4).astype(np.float32)  # a pair's weight; many ties
    whole = TopK(n, k)
    whole.add(a, b, w)
    order = rng.permutation(3000)
    parts = TopK(n, k)
    for chunk in np.array_split(order, 7):  # the same candidates, shuffled, in seven batches
        parts.add(a[chunk], b[chunk], w[chunk])
    assert np.array_equal(whole.keys, parts.keys)
    s, d = whole.pairs()
    weight = {(min(x, y), max(x, y)): float(v) for x, y, v in zip(a.tolist(), b.tolist(), w.tolist()) if x != y}
    for node in range(n):
        mine = sorted((weight[min(node, j), max(node, j)] for j in d[s == node]), reverse=True)
        best = sorted((v for (x, y), v in weight.items() if node in (x, y)), reverse=True)[:k]
        assert mine == best  # the k largest weights, ties settled by the pair hash
    sim = whole.result(lambda x, y: np.array([weight[p] for p in zip(x.tolist(), y.tolist())], np.float32))
    assert sim.indices.dtype == np.int32 and all(sim.pair(int(x), int(y)) == weight[min(x, y), max(x, y)]
                                                  for x, y in zip(s[:50], d[:50]))  # fmt: skip
