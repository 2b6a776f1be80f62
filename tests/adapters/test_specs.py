"""`specs_from_rows`: TaskSpecs from a plain dataset's columns, and the warning for specs with no structure."""

from __future__ import annotations

import json
import warnings

import pytest

from envsched_lightning.adapters.specs import specs_from_rows, tool_names, unstructured_envs, warn_if_unstructured
from envsched_lightning.scheduling import TaskSpec, build_scheduler

SCHEMA = {"type": "function", "function": {"name": "add", "parameters": {"type": "object", "properties": {}}}}


def test_tool_names_from_names_schemas_and_json():
    assert tool_names(["add", "mul"]) == ("add", "mul")
    assert tool_names([SCHEMA, {"name": "mul"}]) == ("add", "mul")
    assert tool_names(json.dumps([SCHEMA])) == ("add",)
    assert tool_names("calculator") == ("calculator",)
    assert tool_names(None) == tool_names("") == tool_names([]) == ()
    with pytest.raises(ValueError, match="without a name"):
        tool_names([{"type": "function"}])


def test_specs_from_dataset_columns():
    datasets = pytest.importorskip("datasets")
    rows = [
        {"env": "arith", "task_id": "0", "tools": json.dumps([SCHEMA]), "verifier": "exact", "steps": 1, "digits": 2.0},
        {"env": "arith", "task_id": "1", "tools": json.dumps([]), "verifier": "exact", "steps": 3, "digits": None},
        {"env": "logic", "task_id": "0", "tools": json.dumps([SCHEMA]), "verifier": "judge", "steps": 2, "digits": 0.0},
    ]
    for source in (rows, datasets.Dataset.from_list(rows), {k: [r[k] for r in rows] for k in rows[0]}):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # structured: no warning
            specs = specs_from_rows(source, features=["steps", "digits"], reward_type=None)
        assert specs[0] == TaskSpec("arith", "0", tools=("add",), verifier="exact", features={"steps": 1, "digits": 2})
        assert specs[1] == TaskSpec("arith", "1", verifier="exact", features={"steps": 3})  # an empty cell: no feature
        assert specs[2].verifier == "judge" and specs[2].reward_type == "binary"
    # a renamed column must exist; a default-named one may be absent
    assert specs_from_rows(rows, features={"n": "steps"}, warn=False)[0].features == {"n": 1.0}
    with pytest.raises(ValueError, match="verifer"):
        specs_from_rows(rows, verifier="verifer")
    with pytest.raises(ValueError, match="not a finite number"):
        specs_from_rows([{**rows[0], "steps": "many"}], features=["steps"])


def test_specs_with_only_env_and_task_id_are_flagged():
    rows = [{"env": e, "task_id": str(i), "prompt": "..."} for e in ("arith", "logic", "words") for i in range(4)]
    with pytest.warns(UserWarning, match="no structure beyond the environment in every environment"):
        specs = specs_from_rows(rows)
    assert unstructured_envs(specs) == ["arith", "logic", "words"]
    # what the warning is about: every intra edge of an environment weighs the same
    sched = build_scheduler("envsched", specs, seed=0, use_gnn=False)
    assert set(sched.graph.intra.weights.tolist()) == {1.0}
    mixed = specs[:4] + [TaskSpec("logic", str(i), tools=(f"t{i}",)) for i in range(4)]
    with pytest.warns(UserWarning, match="1 of 2 environments"):
        assert specs_from_rows([{"env": s.env, "task_id": s.task_id, "tools": list(s.tools)} for s in mixed]) == mixed


def test_the_same_specs_are_warned_about_once():
    """`specs_from_rows` warns; a trainer handed those specs checks them again and stays quiet."""
    rows = [{"env": e, "task_id": str(i)} for e in ("arith", "logic") for i in range(3)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        specs = specs_from_rows(rows)
        assert warn_if_unstructured(specs) == ["arith", "logic"]  # still reported to the caller
        assert warn_if_unstructured(specs_from_rows(rows, warn=False)) == ["arith", "logic"]  # new specs: warned
    assert sum("no structure beyond the environment" in str(w.message) for w in caught) == 2
