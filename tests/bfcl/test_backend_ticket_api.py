"""Our `TicketAPI` backend against the official class (bfcl-eval 2026.3.23), call by call.

For every v4 multi-turn record (base, miss_func, miss_param) involving TicketAPI, the ground
truth's TicketAPI calls are replayed on a fresh official instance and a fresh one of ours, and so
are perturbations of that sequence: every call dropped, duplicated, swapped with the next; every
argument replaced by other values and types, removed, or joined by an unexpected one; calls from
a pool (logins, logouts, filters, edits that break later calls, bad priorities) inserted; and
seeded random combinations of two to four of these. Then every tool is called with edge-case
arguments on the default state and on a few small ones. Each call's rendered result (or raised
exception type and message) and the final public state must agree. `pytest -s` prints the counts.
"""

from __future__ import annotations

import copy
import json
import os
import random
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

official_module = pytest.importorskip("bfcl_eval.eval_checker.multi_turn_eval.func_source_code.ticket_api")

from envsched_lightning.envs.bfcl.backends import render_result  # noqa: E402
from envsched_lightning.envs.bfcl.backends.ticket_api import TicketAPI  # noqa: E402
from envsched_lightning.envs.base import ToolCall  # noqa: E402
from envsched_lightning.envs.bfcl.multi_turn import parse_call_string  # noqa: E402

CLASS = "TicketAPI"
CATEGORIES = ("base", "miss_func", "miss_param")
RANDOM_PER_RECORD = 30
Seq = list[ToolCall]

# Replacement values for any argument: other types, empties, extremes, near-miss statuses.
VALUES: list[Any] = [
    "x", "", "1", "None", "Open", "open", "Closed", "Resolved", 0, 1, 2, 3, 5, 6, -1, 10**30, 1.5, float("nan"),
    True, False, None, [], [1], ["title"], {}, {"a": 1}, (1,), {1, 2},
]  # fmt: skip
# Extra values for `updates`, which reaches dict methods.
UPDATES: list[Any] = [
    {"title": "t"}, {"title": None, "priority": None}, {"status": "Closed"}, {"status": "Resolved"}, {"status": 5},
    {"status": None}, {"priority": 9}, {"priority": "high"}, {"foo": 1}, {"foo": 1, "bar": 2, "title": "x"},
    {"id": 99}, {"created_by": "eve"}, {1: "x"}, {"foo": 1, 2: "y"}, {"description": ["a"]}, "title", ["title"],
]  # fmt: skip


# ---------------------------------------------------------------- data
@pytest.fixture(scope="session")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    env = os.environ.get("ENVSCHED_DATA")
    if env and (Path(env) / "bfcl_v4").is_dir():
        return Path(env) / "bfcl_v4"
    from envsched_lightning.data import fetch

    dest, _ = fetch("bfcl", tmp_path_factory.mktemp("data"), quiet=True)
    return dest


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _load(data_dir: Path) -> tuple[dict[str, dict[str, Any]], list[tuple[str, dict[str, Any], Seq]]]:
    """The TicketAPI docs, and (id, initial config, ground-truth TicketAPI calls) per record."""
    docs = {d["name"]: d for d in _jsonl(data_dir / "multi_turn_func_doc" / "ticket_api.json")}
    records = []
    for category in CATEGORIES:
        name = f"BFCL_v4_multi_turn_{category}.json"
        answers = {a["id"]: a["ground_truth"] for a in _jsonl(data_dir / "possible_answer" / name)}
        for record in _jsonl(data_dir / name):
            if CLASS not in record["involved_classes"]:
                continue
            calls = [
                parse_call_string(text, docs)
                for turn in answers[record["id"]]
                for text in turn
                if re.match(r"\s*(\w+)", text)[1] in docs  # another class's tool
            ]
            records.append((record["id"], record["initial_config"].get(CLASS, {}), calls))
    return docs, records


# ---------------------------------------------------------------- running both sides
def _outcome(fn: Callable[[], Any]) -> tuple[str, ...]:
    try:
        return ("ok", render_result(fn()))
    except Exception as exc:  # noqa: BLE001 - the comparison is on whatever is raised
        return ("raised", type(exc).__name__, str(exc))


def _public(instance: Any) -> dict[str, Any]:
    return {k: v for k, v in vars(instance).items() if not k.startswith("_")}


def compare(config: dict[str, Any], seq: Seq) -> str | None:
    """None when both sides agree on every call and on the final state, else what differs."""
    official = official_module.TicketAPI()
    official._load_scenario(copy.deepcopy(config))
    ours = TicketAPI()
    ours.load(copy.deepcopy(config))
    for i, call in enumerate(seq):
        theirs = _outcome(lambda: getattr(official, call.name)(**copy.deepcopy(call.arguments)))
        mine = _outcome(lambda: ours.call(call.name, copy.deepcopy(call.arguments)))
        if theirs != mine:
            return f"call {i} {call.name}({call.arguments!r}): official {theirs!r}, ours {mine!r}"
    theirs_state, our_state = _public(official), _public(ours)
    if theirs_state.keys() != our_state.keys():
        return f"attributes: official {sorted(theirs_state)}, ours {sorted(our_state)}"
    for key, value in theirs_state.items():
        if value != our_state[key] and repr(value) != repr(our_state[key]):  # repr: NaN is != itself
            return f"state {key}: official {value!r}, ours {our_state[key]!r}"
    return None


# ---------------------------------------------------------------- perturbations
def _ids(config: dict[str, Any], seq: Seq) -> list[Any]:
    """Ticket ids worth aiming at: the scenario's, the ones the sequence uses, the next ones."""
    found = [t.get("id") for t in config.get("ticket_queue", []) if isinstance(t, dict) and "id" in t]
    found += [c.arguments["ticket_id"] for c in seq if "ticket_id" in c.arguments]
    counter = config.get("ticket_counter", 1)
    ids = [*found, counter, counter + 1 if isinstance(counter, int) else 2, 1]
    return list(dict.fromkeys(i for i in ids if type(i) in (int, str)))  # perturbed ids may be lists


def _pool(config: dict[str, Any], seq: Seq) -> list[ToolCall]:
    """Calls to insert: state changes that later calls must see, and calls that fail."""
    pool = [
        ToolCall("ticket_login", {"username": "u", "password": "p"}),
        ToolCall("ticket_login", {"username": "Michael Thompson", "password": "p"}),
        ToolCall("ticket_login", {"username": "", "password": "p"}),
        ToolCall("logout", {}),
        ToolCall("ticket_get_login_status", {}),
        ToolCall("get_user_tickets", {}),
        ToolCall("get_user_tickets", {"status": "open"}),
        ToolCall("get_user_tickets", {"status": 5}),
        ToolCall("create_ticket", {"title": "t"}),
        ToolCall("create_ticket", {"title": "t", "description": "d", "priority": 5}),
        ToolCall("create_ticket", {"title": "t", "priority": "3"}),
        ToolCall("create_ticket", {"title": "t", "priority": 0}),
    ]
    for ticket_id in _ids(config, seq)[:4]:
        pool += [
            ToolCall("get_ticket", {"ticket_id": ticket_id}),
            ToolCall("close_ticket", {"ticket_id": ticket_id}),
            ToolCall("resolve_ticket", {"ticket_id": ticket_id, "resolution": "r"}),
            ToolCall("edit_ticket", {"ticket_id": ticket_id, "updates": {"status": 5}}),
            ToolCall("edit_ticket", {"ticket_id": ticket_id, "updates": {"status": "Closed", "priority": None}}),
            ToolCall("edit_ticket", {"ticket_id": ticket_id, "updates": {"foo": 1, "bar": 2, "title": "x"}}),
        ]
    return pool


def _replace(call: ToolCall, key: str, value: Any) -> ToolCall:
    return ToolCall(call.name, {**call.arguments, key: value})


def _systematic(config: dict[str, Any], seq: Seq) -> Iterator[tuple[str, Seq]]:
    yield "truth", seq
    for i, call in enumerate(seq):
        yield f"drop {i}", seq[:i] + seq[i + 1 :]
        yield f"dup {i}", seq[: i + 1] + seq[i:]
        if i + 1 < len(seq):
            yield f"swap {i}", seq[:i] + [seq[i + 1], seq[i]] + seq[i + 2 :]
        for key in call.arguments:
            values = VALUES + (UPDATES if key == "updates" else []) + _ids(config, seq)
            for value in values:
                yield f"{i} {key}={value!r}", seq[:i] + [_replace(call, key, value)] + seq[i + 1 :]
            rest = {k: v for k, v in call.arguments.items() if k != key}
            yield f"{i} without {key}", seq[:i] + [ToolCall(call.name, rest)] + seq[i + 1 :]
        yield f"{i} +bogus", seq[:i] + [_replace(call, "bogus", 1)] + seq[i + 1 :]
    for j, extra in enumerate(_pool(config, seq)):
        yield f"pool {j} first", [extra] + seq
        yield f"pool {j} last", seq + [extra]


def _random_step(rng: random.Random, config: dict[str, Any], seq: Seq) -> tuple[str, Seq]:
    """One perturbation drawn at random (on an empty sequence, an insertion)."""
    kinds = ["drop", "dup", "swap", "value", "remove", "bogus", "insert"] if seq else ["insert"]
    kind = rng.choice(kinds)
    i = rng.randrange(len(seq)) if seq else 0
    if kind == "drop":
        return f"drop {i}", seq[:i] + seq[i + 1 :]
    if kind == "dup":
        return f"dup {i}", seq[: i + 1] + seq[i:]
    if kind == "swap" and len(seq) > 1:
        i = min(i, len(seq) - 2)
        return f"swap {i}", seq[:i] + [seq[i + 1], seq[i]] + seq[i + 2 :]
    call = seq[i] if seq else None
    if kind in ("value", "remove") and call is not None and call.arguments:
        key = rng.choice(sorted(call.arguments))
        if kind == "remove":
            rest = {k: v for k, v in call.arguments.items() if k != key}
            return f"{i} without {key}", seq[:i] + [ToolCall(call.name, rest)] + seq[i + 1 :]
        value = rng.choice(VALUES + (UPDATES if key == "updates" else []) + _ids(config, seq))
        return f"{i} {key}={value!r}", seq[:i] + [_replace(call, key, value)] + seq[i + 1 :]
    if kind == "bogus" and call is not None:
        return f"{i} +bogus", seq[:i] + [_replace(call, "bogus", 1)] + seq[i + 1 :]
    extra = rng.choice(_pool(config, seq))
    at = rng.randrange(len(seq) + 1)
    return f"insert {extra.name}{extra.arguments} at {at}", seq[:at] + [extra] + seq[at:]


def _randomised(record_id: str, config: dict[str, Any], seq: Seq) -> Iterator[tuple[str, Seq]]:
    rng = random.Random(f"ticket {record_id}")
    for n in range(RANDOM_PER_RECORD):
        current, steps = seq, []
        for _ in range(rng.randint(2, 4)):
            step, current = _random_step(rng, config, current)
            steps.append(step)
        yield f"random {n}: " + "; ".join(steps), current


# ---------------------------------------------------------------- edge cases on small states
ARGS = {
    "ticket_login": ["username", "password"],
    "ticket_get_login_status": [],
    "logout": [],
    "create_ticket": ["title", "description", "priority"],
    "get_ticket": ["ticket_id"],
    "close_ticket": ["ticket_id"],
    "resolve_ticket": ["ticket_id", "resolution"],
    "edit_ticket": ["ticket_id", "updates"],
    "get_user_tickets": ["status"],
}
GOOD = {"username": "u", "password": "p", "title": "t", "description": "d", "priority": 3, "ticket_id": 1,
        "resolution": "r", "updates": {"title": "n"}, "status": "Open"}  # fmt: skip
LOGIN = ToolCall("ticket_login", {"username": "u", "password": "p"})
CREATE_A, CREATE_B = ToolCall("create_ticket", {"title": "a"}), ToolCall("create_ticket", {"title": "b"})
SETUPS: dict[str, Seq] = {
    "default": [],
    "logged in": [LOGIN],
    "one ticket": [LOGIN, CREATE_A],
    "int status": [LOGIN, CREATE_A, ToolCall("edit_ticket", {"ticket_id": 1, "updates": {"status": 7}})],
    "closed+resolved": [LOGIN, CREATE_A, CREATE_B, ToolCall("close_ticket", {"ticket_id": 1}),
                        ToolCall("resolve_ticket", {"ticket_id": 2, "resolution": "r"})],
}  # fmt: skip


def _edge_cases() -> Iterator[tuple[str, Seq]]:
    for setup_name, setup in SETUPS.items():
        for tool, params in ARGS.items():
            good = {p: GOOD[p] for p in params}
            yield f"{setup_name}: {tool} good", setup + [ToolCall(tool, good)]
            yield f"{setup_name}: {tool} no args", setup + [ToolCall(tool, {})]
            yield f"{setup_name}: {tool} +bogus", setup + [ToolCall(tool, {**good, "bogus": 1})]
            for param in params:
                for value in VALUES + (UPDATES if param == "updates" else []):
                    yield f"{setup_name}: {tool} {param}={value!r}", setup + [ToolCall(tool, {**good, param: value})]
                    yield f"{setup_name}: {tool} {param}={value!r} then list", setup + [
                        ToolCall(tool, {**good, param: value}), ToolCall("get_user_tickets", {}),
                        ToolCall("get_ticket", {"ticket_id": 1})]  # fmt: skip


# ---------------------------------------------------------------- the test
def test_ticket_api_matches_official(data_dir: Path) -> None:
    docs, records = _load(data_dir)
    assert records, "no TicketAPI records found"
    official_tools = {n for n, v in vars(official_module.TicketAPI).items() if not n.startswith("_") and callable(v)}
    assert set(docs) == TicketAPI.tool_names == official_tools
    disagreements: list[str] = []
    sequences = calls = 0

    def check(task: str, variant: str, config: dict[str, Any], seq: Seq) -> None:
        nonlocal sequences, calls
        sequences += 1
        calls += len(seq)
        problem = compare(config, seq)
        if problem:
            disagreements.append(f"{task} [{variant}] {problem}")

    for record_id, config, seq in records:
        for variant, perturbed in _systematic(config, seq):
            check(record_id, variant, config, perturbed)
        for variant, perturbed in _randomised(record_id, config, seq):
            check(record_id, variant, config, perturbed)
    for variant, seq in _edge_cases():
        check("edge", variant, {}, seq)
    print(f"\nTicketAPI: {len(records)} records, {sequences} sequences, {calls} calls compared, "
          f"{len(disagreements)} disagreements")  # fmt: skip
    assert not disagreements, f"{len(disagreements)} disagreements, first ones:\n" + "\n".join(disagreements[:8])
