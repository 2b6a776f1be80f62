"""Our `VehicleControlAPI` backend against the official class (bfcl-eval), call by call.

For every v4 multi-turn record (base, miss_func, miss_param) involving the class, the ground
truth's calls of this class are replayed on a fresh official instance and a fresh one of ours,
loaded with the record's scenario; so are perturbations of that sequence: every call dropped,
duplicated, swapped with the next; every argument replaced by other values and types (strings,
ints, None, empty strings, negative, huge and fractional numbers, lists, dicts, the doc's enum
values), removed, or joined by an unexpected one; the scenario with one key left out (its
default then applies) or empty; and seeded random combinations of two to four of these, edge calls
included. On top, every tool is called with edge-case arguments on the default state, both with
the engine off and once it runs.

After each call the rendered results (or the exception's type and message) must be equal, and so
must the public state (`==` and repr, so int/float and order differences show too), the private
values `displayCarStatus` shows, and the random generator's state. `pytest -s` prints the counts.
"""

from __future__ import annotations

import copy
import json
import os
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

official_module = pytest.importorskip("bfcl_eval.eval_checker.multi_turn_eval.func_source_code.vehicle_control")
Official = official_module.VehicleControlAPI

from envsched_lightning.envs.bfcl.backends import render_result  # noqa: E402
from envsched_lightning.envs.bfcl.backends.vehicle_control import VehicleControlAPI  # noqa: E402
from envsched_lightning.envs.bfcl.multi_turn import parse_call_string  # noqa: E402

CLASS = "VehicleControlAPI"
CATEGORIES = ("base", "miss_func", "miss_param")
RANDOM_PER_RECORD = 30
PRIVATE = ("_parkingBrakeForce", "_slopeAngle", "_brakePedalForce")  # not compared upstream, but shown to the model
DOORS = ["driver", "passenger", "rear_left", "rear_right"]
VALUES: list[Any] = [
    "", "abc", "START", "fahrenheit", "Rivermist", "83214", 0, 1, -1, -7.5, 0.25, 0.5, 1.0, 2.5, 37, 65, 121,
    10**30, 10**400, 1e308, -1e308, None, True, False, [], ["driver"], DOORS, ["trunk"], ["driver", "trunk"],
    [["driver"]], "driver", {}, {"driver": "locked"},
]  # fmt: skip
BASE_ARGS: dict[str, dict[str, Any]] = {
    "startEngine": {"ignitionMode": "START"},
    "fillFuelTank": {"fuelAmount": 10.0},
    "lockDoors": {"unlock": False, "door": DOORS},
    "adjustClimateControl": {"temperature": 70.0, "unit": "fahrenheit", "fanSpeed": 20, "mode": "cool"},
    "setHeadlights": {"mode": "on"},
    "displayCarStatus": {"option": "fuel"},
    "activateParkingBrake": {"mode": "engage"},
    "pressBrakePedal": {"pedalPosition": 1.0},
    "setCruiseControl": {"speed": 65, "activate": True, "distanceToNextVehicle": 100},
    "display_log": {"messages": ["a", "b"]},
    "estimate_drive_feasibility_by_mileage": {"distance": 100.0},
    "liter_to_gallon": {"liter": 10},
    "gallon_to_liter": {"gallon": 3},
    "estimate_distance": {"cityA": "83214", "cityB": "74532"},
    "get_zipcode_based_on_city": {"city": "Rivermist"},
    "set_navigation": {"destination": "1 Main St, Rivermist, CA"},
}
RUNNING = [("lockDoors", {"unlock": False, "door": DOORS}), ("pressBrakePedal", {"pedalPosition": 1.0}),
           ("startEngine", {"ignitionMode": "START"})]  # fmt: skip

Call = tuple[str, dict[str, Any]]


# ---------------------------------------------------------------- data
@pytest.fixture(scope="session")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    env = os.environ.get("ENVSCHED_DATA")
    if env and (Path(env) / "bfcl_v4").is_dir():
        return Path(env) / "bfcl_v4"
    from envsched_lightning.data import fetch

    root = tmp_path_factory.mktemp("data")
    fetch("bfcl", root, quiet=True)
    return root / "bfcl_v4"


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _docs(data_dir: Path) -> dict[str, dict[str, Any]]:
    return {d["name"]: d for d in _jsonl(data_dir / "multi_turn_func_doc" / "vehicle_control.json")}


def _records(data_dir: Path, docs: dict[str, dict[str, Any]]) -> list[tuple[str, dict[str, Any], list[Call]]]:
    """(id, scenario, this class's ground-truth calls in order) for each record involving the class."""
    out = []
    for category in CATEGORIES:
        name = f"BFCL_v4_multi_turn_{category}.json"
        truth = {a["id"]: a["ground_truth"] for a in _jsonl(data_dir / "possible_answer" / name)}
        for record in _jsonl(data_dir / name):
            if CLASS not in record["involved_classes"]:
                continue
            calls = []
            for turn in truth[record["id"]]:
                for text in turn:
                    if text.split("(", 1)[0].strip() in docs:
                        call = parse_call_string(text, docs)
                        calls.append((call.name, dict(call.arguments)))
            out.append((record["id"], record["initial_config"].get(CLASS, {}), calls))
    return out


def _enums(doc: dict[str, Any], param: str) -> list[Any]:
    """The values a parameter's description lists as ``[Enum]: [...]``."""
    text = doc["parameters"]["properties"][param].get("description", "")
    return json.loads(text.split("[Enum]:", 1)[1].strip()) if "[Enum]:" in text else []


# ---------------------------------------------------------------- running both sides
def _outcome(fn: Callable[[], Any]) -> tuple[Any, ...]:
    try:
        return ("ok", render_result(fn()))
    except Exception as exc:  # noqa: BLE001 - any exception must be the same on both sides
        return ("raise", type(exc).__module__, type(exc).__qualname__, str(exc))


def _same(a: Any, b: Any) -> bool:
    """Equal reprs: stricter than `==` (1 vs 1.0, key order) and NaN-safe."""
    return repr(a) == repr(b)


def _state(obj: Any) -> tuple[Any, ...]:
    public = {k: v for k, v in vars(obj).items() if not k.startswith("_")}
    return public, {k: getattr(obj, k) for k in PRIVATE}, obj._random.getstate()


class Tally:
    def __init__(self) -> None:
        self.sequences = self.calls = 0
        self.bad: list[str] = []

    def run(self, task: str, variant: str, config: dict[str, Any], calls: list[Call]) -> None:
        """Replay `calls` on both sides; record every disagreement."""
        self.sequences += 1
        official, ours = Official(), VehicleControlAPI()
        errors = [_outcome(lambda: official._load_scenario(copy.deepcopy(config))),
                  _outcome(lambda: ours.load(copy.deepcopy(config)))]  # fmt: skip
        if errors[0][0] != errors[1][0] or errors[0][0] == "raise":
            self.bad.append(f"{task} [{variant}] load: official {errors[0]} / ours {errors[1]}")
            return
        self._compare_state(task, variant, "load", official, ours)
        for step, (name, args) in enumerate(calls):
            self.calls += 1
            theirs = _outcome(lambda: getattr(official, name)(**copy.deepcopy(args)))
            mine = _outcome(lambda: ours.call(name, copy.deepcopy(args)))
            where = f"step {step} {name}({args!r})"
            if theirs != mine:
                self.bad.append(f"{task} [{variant}] {where}: official {theirs!r} / ours {mine!r}")
            if not self._compare_state(task, variant, where, official, ours):
                return

    def _compare_state(self, task: str, variant: str, where: str, official: Any, ours: Any) -> bool:
        theirs, mine = _state(official), _state(ours)
        for label, a, b in zip(("public state", "private values", "random state"), theirs, mine):
            if not _same(a, b):
                self.bad.append(f"{task} [{variant}] after {where}: {label} official {a!r} / ours {b!r}")
                return False
        return True


# ---------------------------------------------------------------- perturbations
def _replacements(docs: dict[str, dict[str, Any]], name: str, param: str) -> list[Any]:
    return VALUES + [v for v in _enums(docs[name], param) if v not in VALUES]


def _edge_calls(docs: dict[str, dict[str, Any]]) -> list[tuple[str, Call]]:
    """(label, call): every tool with its baseline arguments, each argument replaced, removed, or
    joined by an unexpected one."""
    out: list[tuple[str, Call]] = []
    for name in sorted(docs):
        base = BASE_ARGS.get(name, {})
        out += [(f"{name} plain", (name, dict(base))), (f"{name} +extra", (name, {**base, "extra": 1}))]
        for param in docs[name]["parameters"]["properties"]:
            out.append((f"{name} -{param}", (name, {k: v for k, v in base.items() if k != param})))
            for value in _replacements(docs, name, param):
                out.append((f"{name} {param}={value!r:.40}", (name, {**base, param: value})))
    return out


def _mutations(calls: list[Call], docs: dict[str, dict[str, Any]]) -> list[tuple[str, list[Call]]]:
    """Systematic single changes of a call sequence."""
    out: list[tuple[str, list[Call]]] = []
    for i, (name, args) in enumerate(calls):
        out.append((f"drop {i}", calls[:i] + calls[i + 1:]))
        out.append((f"dup {i}", calls[:i + 1] + calls[i:]))
        if i + 1 < len(calls):
            out.append((f"swap {i}", calls[:i] + [calls[i + 1], calls[i]] + calls[i + 2:]))
        out.append((f"extra arg {i}", calls[:i] + [(name, {**args, "extra": 1})] + calls[i + 1:]))
        for param in args:
            out.append((f"remove {param} {i}", calls[:i] + [(name, {k: v for k, v in args.items() if k != param})]
                        + calls[i + 1:]))  # fmt: skip
        for param in docs[name]["parameters"]["properties"]:
            for value in _replacements(docs, name, param):
                if param in args and args[param] == value and type(args[param]) is type(value):
                    continue
                changed = calls[:i] + [(name, {**args, param: value})] + calls[i + 1:]
                out.append((f"{param}={value!r:.40} {i}", changed))
    return out


def _random_mutation(rng: random.Random, calls: list[Call], docs: dict[str, dict[str, Any]],
                     edges: list[tuple[str, Call]]) -> tuple[str, list[Call]]:  # fmt: skip
    kinds = ["insert"] + (["drop", "dup", "swap", "replace", "remove", "extra"] if calls else [])
    kind = rng.choice(kinds)
    if kind == "insert":
        label, call = rng.choice(edges)
        i = rng.randint(0, len(calls))
        return f"insert {label} at {i}", calls[:i] + [call] + calls[i:]
    i = rng.randrange(len(calls))
    name, args = calls[i]
    if kind == "drop":
        return f"drop {i}", calls[:i] + calls[i + 1:]
    if kind == "dup":
        return f"dup {i}", calls[:i + 1] + calls[i:]
    if kind == "swap":
        j = rng.randrange(len(calls))
        swapped = list(calls)
        swapped[i], swapped[j] = swapped[j], swapped[i]
        return f"swap {i} {j}", swapped
    if kind == "extra":
        return f"extra arg {i}", calls[:i] + [(name, {**args, "extra": 1})] + calls[i + 1:]
    params = list(docs[name]["parameters"]["properties"])
    if not params:
        return f"dup {i}", calls[:i + 1] + calls[i:]
    param = rng.choice(params)
    if kind == "remove":
        removed = (name, {k: v for k, v in args.items() if k != param})
        return f"remove {param} {i}", calls[:i] + [removed] + calls[i + 1:]
    value = rng.choice(_replacements(docs, name, param))
    return f"{param}={value!r:.40} {i}", calls[:i] + [(name, {**args, param: value})] + calls[i + 1:]


# ---------------------------------------------------------------- the test
def test_vehicle_control_matches_official(data_dir: Path) -> None:
    docs = _docs(data_dir)
    assert set(docs) == VehicleControlAPI.tool_names
    records = _records(data_dir, docs)
    assert records, "no record involves VehicleControlAPI"
    tally = Tally()
    edges = _edge_calls(docs)
    for task, config, calls in records:
        tally.run(task, "ground truth", config, calls)
        tally.run(task, "empty scenario", {}, calls)
        for key in config:
            tally.run(task, f"scenario without {key}", {k: v for k, v in config.items() if k != key}, calls)
        for variant, changed in _mutations(calls, docs):
            tally.run(task, variant, config, changed)
        rng = random.Random(f"vehicle {task}")
        for n in range(RANDOM_PER_RECORD):
            changed, labels = calls, []
            for _ in range(rng.randint(2, 4)):
                label, changed = _random_mutation(rng, changed, docs, edges)
                labels.append(label)
            tally.run(task, f"random {n}: " + "; ".join(labels), config, changed)
    for label, call in edges:
        tally.run("default state", label, {}, [call])
        tally.run("default state, engine running", label, {}, RUNNING + [call])
    tally.run("default state", "every tool in turn", {}, [call for _, call in edges])
    print(f"\nVehicleControlAPI: {len(records)} records, {tally.sequences} sequences, {tally.calls} calls compared, "
          f"{len(tally.bad)} disagreements")  # fmt: skip
    assert not tally.bad, f"{len(tally.bad)} disagreements, first ones:\n" + "\n".join(tally.bad[:8])


def test_vehicle_control_signatures_match_official() -> None:
    """Same tools, parameter names, kinds, order and defaults as upstream's public methods."""
    import inspect

    def shape(fn: Any) -> list[tuple[str, Any, Any]]:
        return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]

    public = {n for n, _ in inspect.getmembers(Official, inspect.isfunction) if not n.startswith("_")}
    assert public == VehicleControlAPI.tool_names
    for name in sorted(public):
        assert shape(getattr(VehicleControlAPI, name)) == shape(getattr(Official, name)), name
