"""Our `TradingBot` backend against the official bfcl-eval class, call by call.

Runs where bfcl-eval is importable (locally: ``PYTHONPATH=/work/bfcl_official``). For every v4
multi-turn record (base, miss_func, miss_param) involving TradingBot, the ground-truth TradingBot
calls are replayed on a fresh official instance and a fresh one of ours loaded from the same
`initial_config`, together with perturbations of that sequence: every call dropped, duplicated,
swapped with the next; every argument replaced by other values and types, removed, or joined by an
unexpected one; seeded random combinations of two to four of these and of injected calls (logout,
login, deposits, withdrawals, date-filtered histories, the scenarios' stray "order_type" order
key). Every tool is also called with edge-case arguments on the default state, logged in or not.

Each result must render the same (`render_result`), or both sides must raise the same exception
type with the same message; after each sequence every public attribute must be equal.
`pytest -s` prints the counts.
"""

from __future__ import annotations

import copy
import json
import os
import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

official_module = pytest.importorskip("bfcl_eval.eval_checker.multi_turn_eval.func_source_code.trading_bot")

from envsched_lightning.envs.bfcl.backends import render_result  # noqa: E402
from envsched_lightning.envs.bfcl.backends.trading_bot import TradingBot  # noqa: E402
from envsched_lightning.envs.base import ToolCall  # noqa: E402
from envsched_lightning.envs.bfcl.multi_turn import parse_call_string  # noqa: E402

CLASS = "TradingBot"
CATEGORIES = ("base", "miss_func", "miss_param")
RANDOM_PER_RECORD = 30
CALL_NAME = re.compile(r"\s*([A-Za-z_]\w*)\s*\(")

# Replacement values for any argument: other types, empties, signs, sizes, containers, and
# values that mean something here (known symbols, order ids, the stray "order_type" key, dates).
VALUES: list[Any] = [
    "x", "", "AAPL", "order_type", "12345", "2024-09-01", "buy", 7, 0, -5, -2.5, 0.0, 1e300, 10**20, 10**400,
    float("inf"), float("-inf"), True, None, [], ["AAPL", "ZETA"], {}, {"a": 1}, 12345, 12446,
]  # fmt: skip

# Calls injected by random combinations, and the typical arguments of each tool.
TYPICAL: dict[str, dict[str, Any]] = {
    "add_to_watchlist": {"stock": "AAPL"},
    "cancel_order": {"order_id": 12446},
    "filter_stocks_by_price": {"stocks": ["AAPL", "GOOG", "ZETA", "NOPE"], "min_price": 100.0, "max_price": 1000.0},
    "fund_account": {"amount": 100.0},
    "get_account_info": {},
    "get_available_stocks": {"sector": "Technology"},
    "get_current_time": {},
    "get_order_details": {"order_id": 12345},
    "get_order_history": {},
    "get_stock_info": {"symbol": "AAPL"},
    "get_symbol_by_name": {"name": "Apple"},
    "get_transaction_history": {"start_date": "2024-09-01", "end_date": "2024-09-02"},
    "get_watchlist": {},
    "notify_price_change": {"stocks": ["AAPL", "TSLA", "NOPE"], "threshold": 0.1},
    "place_order": {"order_type": "Buy", "symbol": "AAPL", "price": 200.0, "amount": 5},
    "remove_stock_from_watchlist": {"symbol": "NVDA"},
    "trading_get_login_status": {},
    "trading_login": {"username": "user", "password": "pass"},
    "trading_logout": {},
    "withdraw_funds": {"amount": 50.0},
}
POOL: list[ToolCall] = [ToolCall(n, a) for n, a in TYPICAL.items()] + [
    ToolCall("get_transaction_history", {}),
    ToolCall("get_transaction_history", {"start_date": "2024-09-02"}),
    ToolCall("get_transaction_history", {"end_date": "2024-09-01"}),
    ToolCall("cancel_order", {"order_id": "order_type"}),
    ToolCall("get_order_details", {"order_id": "order_type"}),
    ToolCall("cancel_order", {"order_id": 12345}),
    ToolCall("place_order", {"order_type": "Sell", "symbol": "TSLA", "price": 10**6, "amount": 3}),
    ToolCall("place_order", {"order_type": "BUY", "symbol": "GOOG", "price": 2840.34, "amount": 2.7}),
    ToolCall("withdraw_funds", {"amount": 10**9}),
    ToolCall("fund_account", {"amount": -1}),
    ToolCall("remove_stock_from_watchlist", {"symbol": "AAPL"}),
    ToolCall("add_to_watchlist", {"stock": "NOPE"}),
]
DEFAULT_CONFIGS: list[dict[str, Any]] = [
    {},
    {"authenticated": True, "market_status": "Open"},
    {"authenticated": True, "market_status": "Open", "random_seed": 7, "orders": {"1": {"status": "Open"}, "x": "Buy"}},
]

Variant = tuple[str, list[ToolCall]]


# ------------------------------------------------------------------------------------------ data
@pytest.fixture(scope="session")
def bfcl_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    env = os.environ.get("ENVSCHED_DATA")
    if env and (Path(env) / "bfcl_v4").is_dir():
        return Path(env) / "bfcl_v4"
    from envsched_lightning.data import fetch

    root = tmp_path_factory.mktemp("bfcl_data")
    fetch("bfcl", root, quiet=True)
    return root / "bfcl_v4"


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _docs(bfcl_dir: Path) -> dict[str, dict[str, Any]]:
    return {d["name"]: d for d in _jsonl(bfcl_dir / "multi_turn_func_doc" / "trading_bot.json")}


def _records(bfcl_dir: Path, docs: dict[str, dict[str, Any]]) -> list[tuple[str, dict[str, Any], list[ToolCall]]]:
    """(id, TradingBot config, ground-truth TradingBot calls in order) per record involving it."""
    out = []
    for category in CATEGORIES:
        name = f"BFCL_v4_multi_turn_{category}.json"
        answers = {a["id"]: a["ground_truth"] for a in _jsonl(bfcl_dir / "possible_answer" / name)}
        for record in _jsonl(bfcl_dir / name):
            if CLASS not in record["involved_classes"]:
                continue
            calls = [parse_call_string(text, docs) for turn in answers[record["id"]] for text in turn
                     if (m := CALL_NAME.match(text)) and m.group(1) in docs]  # fmt: skip
            out.append((record["id"], record["initial_config"].get(CLASS, {}), calls))
    return out


# ------------------------------------------------------------------------------------------ variants
def _replace(calls: list[ToolCall], i: int, arguments: dict[str, Any]) -> list[ToolCall]:
    return calls[:i] + [ToolCall(calls[i].name, arguments)] + calls[i + 1 :]


def _single_edits(calls: list[ToolCall]) -> Iterator[Variant]:
    """Every one-step perturbation of `calls`."""
    for i, call in enumerate(calls):
        yield f"drop {i}", calls[:i] + calls[i + 1 :]
        yield f"duplicate {i}", calls[: i + 1] + calls[i:]
        if i + 1 < len(calls):
            yield f"swap {i},{i + 1}", calls[:i] + [calls[i + 1], call] + calls[i + 2 :]
        for key in call.arguments:
            for value in VALUES:
                yield f"call {i} {key}={value!r}", _replace(calls, i, {**call.arguments, key: value})
            yield f"call {i} without {key}", _replace(calls, i, {k: v for k, v in call.arguments.items() if k != key})
        yield f"call {i} plus unexpected", _replace(calls, i, {**call.arguments, "unexpected": 1})


def _random_edit(rng: random.Random, calls: list[ToolCall]) -> tuple[str, list[ToolCall]]:
    kinds = ["drop", "duplicate", "swap", "value", "remove", "extra", "inject", "inject"]
    kind = rng.choice(kinds if calls else ["inject"])
    if kind == "inject":
        p, call = rng.randint(0, len(calls)), rng.choice(POOL)
        return f"inject {call.name}{call.arguments} at {p}", calls[:p] + [call] + calls[p:]
    i = rng.randrange(len(calls))
    call = calls[i]
    if kind == "drop":
        return f"drop {i}", calls[:i] + calls[i + 1 :]
    if kind == "duplicate":
        return f"duplicate {i}", calls[: i + 1] + calls[i:]
    if kind == "swap" and i + 1 < len(calls):
        return f"swap {i},{i + 1}", calls[:i] + [calls[i + 1], call] + calls[i + 2 :]
    if kind == "extra" or not call.arguments:
        return f"call {i} plus unexpected", _replace(calls, i, {**call.arguments, "unexpected": None})
    key = rng.choice(sorted(call.arguments))
    if kind == "remove":
        return f"call {i} without {key}", _replace(calls, i, {k: v for k, v in call.arguments.items() if k != key})
    value = rng.choice(VALUES)
    return f"call {i} {key}={value!r}", _replace(calls, i, {**call.arguments, key: value})


def _random_variants(record_id: str, calls: list[ToolCall]) -> Iterator[Variant]:
    rng = random.Random(f"{CLASS}:{record_id}")
    for n in range(RANDOM_PER_RECORD):
        seq, steps = calls, []
        for _ in range(rng.randint(2, 4)):
            step, seq = _random_edit(rng, seq)
            steps.append(step)
        yield f"random {n}: " + "; ".join(steps), seq


def _edge_variants() -> Iterator[Variant]:
    """Every tool on the default state, with each argument given each edge value, logged in or not."""
    for name, typical in TYPICAL.items():
        calls = [ToolCall(name, typical)] + [ToolCall(name, {**typical, k: v}) for k in typical for v in VALUES]
        calls += [ToolCall(name, {k: v for k, v in typical.items() if k != drop}) for drop in typical]
        calls += [ToolCall(name, {**typical, "unexpected": 1})]
        for call in calls:
            yield f"{name}{call.arguments}", [call]
            yield f"login, {name}{call.arguments}", [ToolCall("trading_login", TYPICAL["trading_login"]), call]


# ------------------------------------------------------------------------------------------ compare
def _outcome(fn: Any, *args: Any) -> tuple[str, str]:
    try:
        return "ok", render_result(fn(*args))
    except Exception as exc:  # noqa: BLE001 - any exception is an outcome to compare
        return type(exc).__name__, str(exc)


def _public(obj: Any) -> dict[str, Any]:
    return {k: v for k, v in vars(obj).items() if not k.startswith("_")}


def _compare(config: dict[str, Any], calls: list[ToolCall]) -> list[str]:
    """Disagreements (empty when none) between the official class and ours on one sequence."""
    official = official_module.TradingBot()
    official._load_scenario(copy.deepcopy(config))
    ours = TradingBot()
    ours.load(copy.deepcopy(config))
    problems = []
    for i, call in enumerate(calls):
        theirs = _outcome(lambda: getattr(official, call.name)(**copy.deepcopy(dict(call.arguments))))
        mine = _outcome(ours.call, call.name, copy.deepcopy(dict(call.arguments)))
        if theirs != mine:
            problems.append(f"step {i} {call.name}({call.arguments}): official {theirs} != ours {mine}")
    state_theirs, state_ours = _public(official), _public(ours)
    if state_theirs.keys() != state_ours.keys():
        problems.append(f"attributes: official {sorted(state_theirs)} != ours {sorted(state_ours)}")
    for key in state_theirs.keys() & state_ours.keys():
        if state_theirs[key] != state_ours[key]:
            problems.append(f"state {key}: official {state_theirs[key]!r} != ours {state_ours[key]!r}")
    return problems


def test_trading_bot_matches_official(bfcl_dir: Path) -> None:
    docs = _docs(bfcl_dir)
    assert set(docs) == TradingBot.tool_names
    records = _records(bfcl_dir, docs)
    assert records, "no record involves TradingBot"
    sequences = n_calls = 0
    failures: list[str] = []

    def run(label: str, config: dict[str, Any], calls: list[ToolCall]) -> None:
        nonlocal sequences, n_calls
        sequences += 1
        n_calls += len(calls)
        failures.extend(f"{label}: {p}" for p in _compare(config, calls))

    for record_id, config, calls in records:
        run(f"{record_id} [ground truth]", config, calls)
        for variant, seq in _single_edits(calls):
            run(f"{record_id} [{variant}]", config, seq)
        for variant, seq in _random_variants(record_id, calls):
            run(f"{record_id} [{variant}]", config, seq)
    for i, config in enumerate(DEFAULT_CONFIGS):
        for variant, seq in _edge_variants():
            run(f"default state {i} [{variant}]", config, seq)

    print(f"\nTradingBot: {len(records)} records, {sequences} sequences, {n_calls} calls compared, "
          f"{len(failures)} disagreements")  # fmt: skip
    assert not failures, f"{len(failures)} disagreements, first ones:\n" + "\n".join(failures[:10])


def test_signatures_match_official() -> None:
    """Same tools, same parameter names, order and defaults (so TypeErrors read the same)."""
    import inspect

    for name in TradingBot.tool_names:
        theirs = inspect.signature(getattr(official_module.TradingBot, name))
        mine = inspect.signature(getattr(TradingBot, name))
        assert [(p.name, p.default, p.kind) for p in theirs.parameters.values()] == [
            (p.name, p.default, p.kind) for p in mine.parameters.values()
        ], name
