"""Our `TravelAPI` backend against the official class (bfcl-eval 2026.3.23), call by call.

Needs bfcl-eval importable (skipped otherwise) and the BFCL v4 data (`$ENVSCHED_DATA/bfcl_v4`, else
fetched once per session into a temporary folder). For every v4 multi-turn record (base,
miss_func, miss_param) involving TravelAPI, the ground truth's TravelAPI calls are replayed on a
fresh official instance and a fresh one of ours, as are perturbations of that sequence: every call
dropped, duplicated, swapped with the next; every argument replaced by other values and types,
removed, or joined by an unexpected one; and seeded random combinations of two to four edits
(including values taken from the record and edge-case calls inserted). Every tool is also called
with edge-case arguments on a few fixed states, and fares, exchange rates and city airports are
compared over their whole tables. Each call's rendered result (or exception type and message)
and, after each sequence, every public attribute must agree. `pytest -s` prints the counts.
"""

from __future__ import annotations

import copy
import inspect
import json
import os
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

official_module = pytest.importorskip("bfcl_eval.eval_checker.multi_turn_eval.func_source_code.travel_booking")
OfficialTravelAPI = official_module.TravelAPI

from tests.bfcl.bfcl_compare import canonical  # noqa: E402
from envsched_lightning.envs.bfcl.backends import render_result  # noqa: E402
from envsched_lightning.envs.bfcl.backends.travel_booking import AIRPORTS, CITY_AIRPORTS, TravelAPI  # noqa: E402
from envsched_lightning.envs.base import ToolCall  # noqa: E402
from envsched_lightning.envs.bfcl.multi_turn import parse_call_string  # noqa: E402

CLASS = "TravelAPI"
CATEGORIES = ("base", "miss_func", "miss_param")
RANDOM_PER_RECORD = 30
SHOWN = 5  # disagreements shown in an assertion message

Call = ToolCall
Seq = list[ToolCall]


# ---------------------------------------------------------------- data
@pytest.fixture(scope="session")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    env = os.environ.get("ENVSCHED_DATA")
    if env and (Path(env) / "bfcl_v4").is_dir():
        return Path(env) / "bfcl_v4"
    from envsched_lightning.data import fetch

    root = tmp_path_factory.mktemp("envsched_data")
    try:
        fetch("bfcl", root, quiet=True)
    except Exception as exc:  # noqa: BLE001 - no network or no pip: nothing to compare against
        pytest.skip(f"BFCL v4 data unavailable: {exc}")
    return root / "bfcl_v4"


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="session")
def docs(data_dir: Path) -> dict[str, dict[str, Any]]:
    return {d["name"]: d for d in _jsonl(data_dir / "multi_turn_func_doc" / "travel_booking.json")}


@pytest.fixture(scope="session")
def records(data_dir: Path, docs: dict[str, dict[str, Any]]) -> list[tuple[str, dict[str, Any], Seq]]:
    """(task id, TravelAPI config, its ground-truth calls in order) per record involving TravelAPI."""
    out = []
    for category in CATEGORIES:
        name = f"BFCL_v4_multi_turn_{category}.json"
        answers = {a["id"]: a["ground_truth"] for a in _jsonl(data_dir / "possible_answer" / name)}
        for record in _jsonl(data_dir / name):
            if CLASS not in record["involved_classes"]:
                continue
            calls = [parse_call_string(text, docs) for turn in answers[record["id"]] for text in turn
                     if text.split("(", 1)[0].strip() in docs]  # fmt: skip
            out.append((record["id"], record["initial_config"].get(CLASS, {}), calls))
    return out


# ---------------------------------------------------------------- running both sides
def _outcome(run: Callable[[], Any]) -> tuple[str, ...]:
    try:
        return ("returned", canonical(render_result(run())))
    except Exception as exc:  # noqa: BLE001 - the exception itself is what is compared
        return ("raised", type(exc).__name__, canonical(str(exc)))


def _public(instance: Any) -> dict[str, Any]:
    return {k: v for k, v in vars(instance).items() if not k.startswith("_")}


def _same(a: Any, b: Any) -> bool:
    return a == b or repr(a) == repr(b)  # repr: a NaN reached by both sides is still agreement


class Tally:
    """Sequences and calls compared, and every disagreement found."""

    def __init__(self) -> None:
        self.sequences = self.calls = 0
        self.problems: list[str] = []

    def run(self, task: str, variant: str, config: dict[str, Any], calls: Seq) -> None:
        official, ours = OfficialTravelAPI(), TravelAPI()
        official._load_scenario(copy.deepcopy(config))
        ours.load(copy.deepcopy(config))
        self.sequences += 1
        for i, call in enumerate(calls):
            self.calls += 1
            theirs = _outcome(lambda: getattr(official, call.name)(**copy.deepcopy(call.arguments)))
            mine = _outcome(lambda: ours.call(call.name, copy.deepcopy(call.arguments)))
            if theirs != mine:
                self.problems.append(f"{task} [{variant}] call {i} {call.name}({call.arguments!r}):\n"
                                     f"  official: {theirs}\n  ours:     {mine}")  # fmt: skip
                return
        want, got = _public(official), _public(ours)
        bad = sorted(k for k in want.keys() | got.keys() if k not in want or k not in got or not _same(want[k], got[k]))
        if bad:
            self.problems.append(f"{task} [{variant}] state differs in {bad}:\n"
                                 f"  official: { {k: want.get(k) for k in bad} }\n"
                                 f"  ours:     { {k: got.get(k) for k in bad} }")  # fmt: skip

    def report(self, what: str) -> None:
        print(f"\n{what}: {self.sequences} sequences, {self.calls} calls compared, {len(self.problems)} disagreements")
        assert not self.problems, "\n".join(self.problems[:SHOWN])


# ---------------------------------------------------------------- perturbations
def alternatives(value: Any) -> list[Any]:
    """Other values and types for an argument whose ground-truth value is `value`."""
    alts: list[Any] = [None, "", "abc", -1, -250.5, 0, 10**30, 10**400, 1e308, [], [value], {}, {"k": value}, True]
    if isinstance(value, str):
        alts += [int(value) if value.isdigit() else 7, value.upper(), value + "x"]
    elif isinstance(value, (int, float)):
        alts += [str(value), -value, value * 1000]
    return alts


def systematic(calls: Seq) -> Iterator[tuple[str, Seq]]:
    yield "ground truth", list(calls)
    for i, call in enumerate(calls):
        yield f"drop {i}", calls[:i] + calls[i + 1:]
        yield f"duplicate {i}", calls[:i + 1] + calls[i:]
        if i + 1 < len(calls):
            yield f"swap {i},{i + 1}", calls[:i] + [calls[i + 1], call] + calls[i + 2:]
        yield f"unexpected argument {i}", calls[:i] + [Call(call.name, {**call.arguments, "unexpected": 1})] + calls[i + 1:]
        for key, value in call.arguments.items():
            removed = {k: v for k, v in call.arguments.items() if k != key}
            yield f"remove {i}.{key}", calls[:i] + [Call(call.name, removed)] + calls[i + 1:]
            for j, alt in enumerate(alternatives(value)):
                yield f"replace {i}.{key} #{j}", calls[:i] + [Call(call.name, {**call.arguments, key: alt})] + calls[i + 1:]


def record_values(config: dict[str, Any], calls: Seq) -> list[Any]:
    """Values a random edit may reuse: the record's ids, tokens and arguments."""
    values: list[Any] = [config.get("access_token"), *config.get("credit_card_list", {}), *config.get("booking_record", {})]
    values += [v for call in calls for v in call.arguments.values()]
    return values or [None]


def random_edit(rng: random.Random, calls: Seq, pool: list[Any]) -> tuple[str, Seq]:
    """One random edit of `calls` (a short label, the edited list)."""
    kind = rng.choice(["drop", "duplicate", "swap", "replace", "reuse", "remove", "unexpected", "insert"])
    if kind == "insert" or not calls:
        i = rng.randrange(len(calls) + 1)
        return "insert", calls[:i] + [rng.choice(EDGE_CALLS)] + calls[i:]
    i = rng.randrange(len(calls))
    call = calls[i]
    if kind == "drop":
        return kind, calls[:i] + calls[i + 1:]
    if kind == "duplicate":
        return kind, calls[:i + 1] + calls[i:]
    if kind == "swap":
        j = rng.randrange(len(calls))
        edited = list(calls)
        edited[i], edited[j] = edited[j], edited[i]
        return kind, edited
    if kind == "unexpected" or not call.arguments:
        return "unexpected", calls[:i] + [Call(call.name, {**call.arguments, "extra": "x"})] + calls[i + 1:]
    key = rng.choice(list(call.arguments))
    if kind == "remove":
        arguments = {k: v for k, v in call.arguments.items() if k != key}
    elif kind == "reuse":
        arguments = {**call.arguments, key: rng.choice(pool)}
    else:
        arguments = {**call.arguments, key: rng.choice(alternatives(call.arguments[key]))}
    return kind, calls[:i] + [Call(call.name, arguments)] + calls[i + 1:]


def random_variants(task: str, config: dict[str, Any], calls: Seq) -> Iterator[tuple[str, Seq]]:
    pool = record_values(config, calls)
    for n in range(RANDOM_PER_RECORD):
        rng = random.Random(f"{task}/{n}")
        edited, labels = list(calls), []
        for _ in range(rng.randint(2, 4)):
            label, edited = random_edit(rng, edited, pool)
            labels.append(label)
        yield f"random {n} ({', '.join(labels)})", edited


# ---------------------------------------------------------------- edge cases on fixed states
CARD = {"card_number": "4111", "expiration_date": "12/2030", "cardholder_name": "Ann Lee",
        "card_verification_number": 123, "balance": 5000.0}  # fmt: skip
BOOKING = {"card_id": "card1", "travel_date": "2024-03-01", "travel_from": "SFO", "travel_to": "LAX",
           "travel_class": "economy", "travel_cost": 200.0, "transaction_id": "12345678"}  # fmt: skip
RICH = {"access_token": "tok", "token_type": "Bearer", "token_expires_in": 2, "token_scope": "read_write",
        "user_first_name": "Ann", "user_last_name": "Lee", "budget_limit": 1000.0,
        "credit_card_list": {"card1": CARD, "card2": {**CARD, "balance": 150}, "nobal": {"card_number": "5"}},
        "booking_record": {"b1": BOOKING, "b2": {**BOOKING, "card_id": "card2", "travel_cost": 99},
                           "orphan": {**BOOKING, "card_id": "gone"}, "bare": {"card_id": "card1"}}}  # fmt: skip
STATES = {
    "default": {},
    "rich": RICH,
    "rich, no budget": {**RICH, "budget_limit": None},
    "expired": {**RICH, "token_expires_in": 0},
    "seeded": {**RICH, "random_seed": 7, "budget_limit": 10},
}
GOOD = {  # plausible arguments per tool on the "rich" state
    "authenticate_travel": dict(client_id="c", client_secret="s", refresh_token="r", grant_type="read_write",
                                user_first_name="Ann", user_last_name="Lee"),
    "book_flight": dict(access_token="tok", card_id="card1", travel_date="2024-03-01", travel_from="SFO",
                        travel_to="LAX", travel_class="economy"),
    "cancel_booking": dict(access_token="tok", booking_id="b1"),
    "compute_exchange_rate": dict(base_currency="USD", target_currency="EUR", value=100.0),
    "contact_customer_support": dict(booking_id="b1", message="help"),
    "get_all_credit_cards": {},
    "get_booking_history": dict(access_token="tok"),
    "get_budget_fiscal_year": dict(lastModifiedAfter="2016-03-29T16:12:20", includeRemoved="true"),
    "get_credit_card_balance": dict(access_token="tok", card_id="card1"),
    "get_flight_cost": dict(travel_from="SFO", travel_to="LAX", travel_date="2024-03-01", travel_class="economy"),
    "get_nearest_airport_by_city": dict(location="Rivermist"),
    "list_all_airports": {},
    "purchase_insurance": dict(access_token="tok", insurance_type="comprehensive", booking_id="b1",
                               insurance_cost=50.0, card_id="card1"),
    "register_credit_card": dict(access_token="tok", card_number="4222", expiration_date="01/2031",
                                 cardholder_name="Ann Lee", card_verification_number=456),
    "retrieve_invoice": dict(access_token="tok", booking_id="b1", insurance_id="i1"),
    "set_budget_limit": dict(access_token="tok", budget_limit=500),
    "travel_get_login_status": {},
    "verify_traveler_information": dict(first_name="Ann", last_name="Lee", date_of_birth="1990-05-15",
                                        passport_number="US123456"),
}  # fmt: skip
SPECIAL: dict[str, list[Any]] = {  # values that reach particular branches, per parameter name
    "access_token": ["tok", None, "wrong"],
    "card_id": ["card1", "card2", "nobal", "missing"],
    "booking_id": ["b1", "b2", "orphan", "bare", "missing", None],
    "card_number": ["card1", "4111"],
    "travel_date": ["2024-03-02", "2024-02-30", "2024-1-5", "24-01-01", "٢٠٢٤-٠١-٠٣", "2024-03-01x", "abcd"],
    "date_of_birth": ["2010-01-01", "1900-01-01", "1990-13-01", "15/05/1990", "١٩٩٠-٠٥-١٥"],
    "travel_from": ["LHR", "JFK", "PVG", "XXX", "sfo", "OKD", "CRH"],
    "travel_to": ["CDG", "PEK", "PVG", "SFO", "XXX", "HKG", "LAX"],
    "travel_class": ["business", "first", "Economy", "premium"],
    "base_currency": ["RMB", "JPY", "USD", "XYZ"],
    "target_currency": ["USD", "MXN", "RMB", "XYZ"],
    "value": [0, -3, 7, 1.005, "12", 10**400],
    "budget_limit": ["300", "1e3", "abc", 0, -10, 10**400],
    "insurance_cost": [4999.0, 6000, 1000, 1000.01, "5"],
    "passport_number": ["UK123", "us123", ""],
    "first_name": ["Bob", None],
    "last_name": ["Smith", None],
    "location": ["Atlantis", "rivermist", "Tokyo"],
}  # fmt: skip


def _edge_calls() -> list[ToolCall]:
    calls = []
    for name, good in GOOD.items():
        calls.append(Call(name, dict(good)))
        calls.append(Call(name, {**good, "bogus": 1}))
        for key, value in good.items():
            calls.append(Call(name, {k: v for k, v in good.items() if k != key}))
            for alt in SPECIAL.get(key, []) + alternatives(value):
                calls.append(Call(name, {**good, key: alt}))
    return calls


EDGE_CALLS = _edge_calls()


# ---------------------------------------------------------------- tests
def test_same_tools_and_signatures(docs: dict[str, dict[str, Any]]) -> None:
    assert TravelAPI.tool_names == set(docs)
    for name in sorted(docs):
        ours = [(p.name, p.kind, p.default) for p in inspect.signature(getattr(TravelAPI, name)).parameters.values()]
        theirs = [(p.name, p.kind, p.default) for p in inspect.signature(getattr(OfficialTravelAPI, name)).parameters.values()]
        assert ours == theirs, name
        assert getattr(TravelAPI, name).__qualname__ == getattr(OfficialTravelAPI, name).__qualname__


def test_records_and_perturbations(records: list[tuple[str, dict[str, Any], Seq]]) -> None:
    assert records, "no TravelAPI records found"
    tally = Tally()
    for task, config, calls in records:
        for variant, edited in systematic(calls):
            tally.run(task, variant, config, edited)
        for variant, edited in random_variants(task, config, calls):
            tally.run(task, variant, config, edited)
    print(f"\n{len(records)} records involving {CLASS}", end="")
    tally.report("ground truth and perturbations")


def test_edge_cases_on_fixed_states() -> None:
    tally = Tally()
    for state_name, config in STATES.items():
        for i, call in enumerate(EDGE_CALLS):
            tally.run("edge", f"{state_name} #{i}", config, [call])
    # Sequences that build on their own results: log in, register, book, insure, cancel.
    login = Call("authenticate_travel", dict(GOOD["authenticate_travel"]))
    for state_name, config in STATES.items():
        token = OfficialTravelAPI()
        token._load_scenario(copy.deepcopy(config))
        access = token.authenticate_travel(**GOOD["authenticate_travel"])["access_token"]
        card = token.register_credit_card(access, "4999", "01/2030", "Ann Lee", 1)["card_id"]
        booked = token.book_flight(access, card, "2024-03-01", "SFO", "LAX", "economy").get("booking_id")
        steps = [login,
                 Call("register_credit_card", dict(GOOD["register_credit_card"], access_token=access, card_number="4999")),
                 Call("book_flight", dict(GOOD["book_flight"], access_token=access, card_id=card)),
                 Call("purchase_insurance", dict(GOOD["purchase_insurance"], access_token=access, booking_id=booked,
                                                 card_id=card)),
                 Call("retrieve_invoice", dict(access_token=access, booking_id=booked)),
                 Call("get_booking_history", dict(access_token=access)),
                 Call("register_credit_card", dict(GOOD["register_credit_card"], access_token=access, card_number=card)),
                 Call("cancel_booking", dict(access_token=access, booking_id=booked)),
                 Call("get_credit_card_balance", dict(access_token=access, card_id=card)),
                 Call("travel_get_login_status", {}),
                 Call("get_all_credit_cards", {})]  # fmt: skip
        for variant, edited in systematic(steps):
            tally.run("built-up", f"{state_name}: {variant}", config, edited)
    tally.report("edge cases on fixed states")


def test_whole_tables() -> None:
    tally = Tally()
    codes = [*AIRPORTS, "PVG", "XXX"]
    for frm in codes:
        for to in codes:
            for cls in ("economy", "business", "first", "coach"):
                for date in ("2024-03-01", "2024-03-02"):
                    tally.run("fares", f"{frm}-{to} {cls} {date}", {}, [Call("get_flight_cost", dict(
                        travel_from=frm, travel_to=to, travel_date=date, travel_class=cls))])  # fmt: skip
                    tally.run("booking", f"{frm}-{to} {cls} {date}", {**RICH, "budget_limit": None}, [Call("book_flight", dict(
                        access_token="tok", card_id="card1", travel_date=date, travel_from=frm, travel_to=to,
                        travel_class=cls))])  # fmt: skip
    currencies = ["USD", "RMB", "EUR", "JPY", "GBP", "CAD", "AUD", "INR", "RUB", "BRL", "MXN", "CHF"]
    for base in currencies:
        for target in currencies:
            for value in (1, 0.1, 123.456, 1000, -5.5):
                tally.run("rates", f"{base}->{target} {value}", {}, [Call("compute_exchange_rate", dict(
                    base_currency=base, target_currency=target, value=value))])  # fmt: skip
    for city in [*CITY_AIRPORTS, "Atlantis"]:
        tally.run("cities", city, {}, [Call("get_nearest_airport_by_city", dict(location=city))])
    tally.report("whole tables")
