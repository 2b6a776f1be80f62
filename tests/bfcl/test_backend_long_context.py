"""Our eight BFCL backends in long-context mode against the official classes (bfcl-eval 2026.3.23)
loaded with ``_load_scenario(config, long_context=True)``, call by call.

Needs bfcl-eval importable (skipped otherwise) and the BFCL v4 data (`$ENVSCHED_DATA/bfcl_v4`, else
fetched once per session into a temporary folder). For every record of
`BFCL_v4_multi_turn_long_context.json` and every class it involves, that class's ground-truth calls
are replayed on a fresh official instance and a fresh one of ours (`load(config, long_context=True)`),
as are perturbations: every call dropped, duplicated, swapped with the next; every argument
replaced by other values and types (the long-context filler's ids and names among them), removed,
or joined by an unexpected one; seeded random combinations of two to four edits, including calls
that reach the filler (filler files, cards, bookings, every car status). The sequences are also
played as the checker plays them, twice in a row on two instances (the model's, then the ground
truth's) that share upstream's per-process state, and the fare table and car statuses are covered
whole. Each call's rendered result (or exception type and message) and, after each sequence, every
public attribute must agree. Every sequence runs as in a fresh Python process: upstream's
module-level filler (which its TravelAPI and VehicleControlAPI write into) and
`TwitterAPI.post_tweet`'s mutable default lists are restored first. `pytest -s` prints the counts.
"""

from __future__ import annotations

import copy
import importlib
import json
import os
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

official_lc = pytest.importorskip("bfcl_eval.eval_checker.multi_turn_eval.func_source_code.long_context")

from tests.bfcl.bfcl_compare import canonical  # noqa: E402
from envsched_lightning.envs.bfcl.backends import Backend, render_result  # noqa: E402
from envsched_lightning.envs.bfcl.backends import long_context_data as ours_lc  # noqa: E402
from envsched_lightning.envs.bfcl.backends.math_api import MAX_PRECISION  # noqa: E402
from envsched_lightning.envs.bfcl.backends.travel_booking import AIRPORTS  # noqa: E402
from envsched_lightning.envs.base import ToolCall  # noqa: E402
from envsched_lightning.envs.bfcl.multi_turn import BACKENDS, FUNC_DOC_FILES, parse_call_string  # noqa: E402

OFFICIAL_MODULE = {"GorillaFileSystem": "gorilla_file_system", "TwitterAPI": "posting_api"}  # else the doc file's stem
OFFICIAL = {
    cls: getattr(importlib.import_module(
        f"bfcl_eval.eval_checker.multi_turn_eval.func_source_code.{OFFICIAL_MODULE.get(cls, stem)}"), cls)
    for cls, stem in FUNC_DOC_FILES.items()
}  # fmt: skip
FILE = "BFCL_v4_multi_turn_long_context.json"
RANDOM_PER_RECORD = 20
PAIRED_PER_RECORD = 5  # random variants also played on a model/ground-truth pair
SHOWN = 5  # disagreements shown in an assertion message
FILLER_SNAPSHOT = copy.deepcopy({k: v for k, v in vars(official_lc).items() if k.isupper()})
WRITTEN_FILLER = ("CREDIT_CARD_EXTENSION", "LONG_WEATHER_EXTENSION")  # upstream's TravelAPI, VehicleControlAPI

Call = ToolCall
Seq = list[ToolCall]
Record = tuple[str, str, dict[str, Any], Seq]  # task id, class, its config, its ground-truth calls

# Calls that reach the long-context filler, per class (inserted by random edits, and run on fixed states).
FILLER_FILE = ours_lc.POPULATE_FILE_EXTENSION[0]
LC_CALLS: dict[str, list[Call]] = {
    "GorillaFileSystem": [
        Call("ls", {}), Call("ls", {"a": True}), Call("cat", {"file_name": FILLER_FILE}),
        Call("touch", {"file_name": FILLER_FILE}), Call("wc", {"file_name": FILLER_FILE, "mode": "c"}),
        Call("du", {}), Call("du", {"human_readable": True}), Call("find", {}), Call("find", {"name": "image_"}),
        Call("cd", {"folder": ".."}), Call("pwd", {}), Call("rm", {"file_name": FILLER_FILE}),
    ],
    "TradingBot": [
        Call("trading_login", {"username": "u", "password": "p"}), Call("get_watchlist", {}),
        Call("get_stock_info", {"symbol": "AAPL"}), Call("get_stock_info", {"symbol": "NOPE"}),
        Call("get_order_details", {"order_id": 12345}), Call("get_order_details", {"order_id": 12446}),
        Call("get_order_details", {"order_id": "order_type"}), Call("get_order_details", {"order_id": 1}),
        *[Call("get_available_stocks", {"sector": s}) for s in ("Technology", "Automobile", "Energy")],
        Call("get_transaction_history", {}),
        Call("get_transaction_history", {"start_date": "2024-09-01", "end_date": "2024-09-03"}),
        Call("fund_account", {"amount": 100.0}), Call("add_to_watchlist", {"stock": "TSLA"}),
        Call("place_order", {"order_type": "Buy", "symbol": "AAPL", "price": 1.5, "amount": 2}),
    ],
    "TravelAPI": [  # access_token None is replaced by the state's own token (`_for_state`)
        Call("get_all_credit_cards", {}),
        Call("get_credit_card_balance", {"access_token": None, "card_id": "1234567812345678"}),
        Call("book_flight", {"access_token": None, "card_id": "1234567812345678", "travel_date": "2024-05-21",
                             "travel_from": "SFO", "travel_to": "JFK", "travel_class": "economy"}),
        Call("book_flight", {"access_token": None, "card_id": "1000000790000001", "travel_date": "2024-05-22",
                             "travel_from": "LHR", "travel_to": "CDG", "travel_class": "first"}),
        Call("cancel_booking", {"access_token": None, "booking_id": "booking_901"}),
        Call("cancel_booking", {"access_token": None, "booking_id": "booking_403"}),
        Call("purchase_insurance", {"access_token": None, "insurance_type": "full", "booking_id": "booking_902",
                                    "insurance_cost": 75.5, "card_id": "2345678923456789"}),
        Call("retrieve_invoice", {"access_token": None, "booking_id": "booking_999"}),
        Call("get_booking_history", {"access_token": None}),
        Call("contact_customer_support", {"booking_id": "booking_400", "message": "hi"}),
        *[Call("get_flight_cost", {"travel_from": a, "travel_to": b, "travel_date": "2024-01-02", "travel_class": c})
          for a, b, c in (("OKD", "LAX", "business"), ("LAX", "OKD", "business"), ("SFO", "LAX", "coach"))],
        Call("register_credit_card", {"access_token": None, "card_number": "1234567812345678", "expiration_date": "1/30",
                                      "cardholder_name": "A B", "card_verification_number": 1}),
    ],
    "VehicleControlAPI": [
        *[Call("displayCarStatus", {"option": o}) for o in
          ("fuel", "battery", "doors", "climate", "headlights", "parkingBrake", "brakePedal", "engine", "bogus")],
        Call("check_tire_pressure", {}), Call("activateParkingBrake", {"mode": "engage"}),
        Call("activateParkingBrake", {"mode": "release"}), Call("activateParkingBrake", {"mode": "hold"}),
        Call("estimate_distance", {"cityA": "83214", "cityB": "74532"}),
        Call("estimate_distance", {"cityA": "1", "cityB": "2"}),
        Call("get_outside_temperature_from_google", {}), Call("get_outside_temperature_from_weather_com", {}),
    ],
}  # fmt: skip
# Values a random edit may put into an argument: the filler's ids and names.
FILLER_VALUES: list[Any] = [FILLER_FILE, "log.txt", "report.txt", "1234567812345678", "1000000790000001", "booking_901",
                            "booking_400", "trans_002", "JHGUN", 12345, "order_type"]  # fmt: skip


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
def records(data_dir: Path) -> list[Record]:
    """(task id, class, its config, its ground-truth calls in order) per record and involved class."""
    docs = {cls: {d["name"]: d for d in _jsonl(data_dir / "multi_turn_func_doc" / f"{stem}.json")}
            for cls, stem in FUNC_DOC_FILES.items()}  # fmt: skip
    answers = {a["id"]: a["ground_truth"] for a in _jsonl(data_dir / "possible_answer" / FILE)}
    out = []
    for record in _jsonl(data_dir / FILE):
        owner = {name: cls for cls in record["involved_classes"] for name in docs[cls]}  # a later class wins
        texts = [text for turn in answers[record["id"]] for text in turn]
        for cls in record["involved_classes"]:
            mine = [t for t in texts if owner.get(t.split("(", 1)[0].strip()) == cls]
            calls = [parse_call_string(t, docs[cls]) for t in mine]
            out.append((record["id"], cls, record["initial_config"].get(cls, {}), calls))
    return out


# ---------------------------------------------------------------- running both sides
def _fresh_process() -> None:
    """Undo what earlier sequences wrote into upstream's module-level state (in place: its classes
    hold references to these very objects). Only these two are written to (checked at the end)."""
    for name in WRITTEN_FILLER:
        live = getattr(official_lc, name)
        live.clear()
        live.update(copy.deepcopy(FILLER_SNAPSHOT[name]))
    OFFICIAL["TwitterAPI"].post_tweet.__defaults__ = ([], [])


def _outcome(run: Callable[[], Any]) -> tuple[str, ...]:
    try:
        return ("returned", canonical(render_result(run())))  # a printed set's order is not upstream's to keep
    except Exception as exc:  # noqa: BLE001 - the exception itself is what is compared
        return ("raised", type(exc).__name__, canonical(str(exc)))


def _plain(value: Any, above: tuple[int, ...] = ()) -> Any:
    """A file-system tree as nested tuples (our classes and upstream's compare only with their own);
    a folder moved into itself shares its contents with an ancestor: marked by that ancestor's depth."""
    if hasattr(value, "contents") and hasattr(value, "name"):
        if id(value.contents) in above:
            return ("cycle", value.name, above.index(id(value.contents)))
        below = (*above, id(value.contents))
        return ("dir", value.name, {k: _plain(v, below) for k, v in value.contents.items()})
    if hasattr(value, "content") and hasattr(value, "name"):
        return ("file", value.name, value.content)
    return value


def _public(instance: Any) -> dict[str, Any]:
    return {k: _plain(v) for k, v in vars(instance).items() if not k.startswith("_")}


def _same(a: Any, b: Any) -> bool:
    return a == b or repr(a) == repr(b)  # repr: a NaN reached by both sides is still agreement


class Tally:
    """Sequences and calls compared, and every disagreement found."""

    def __init__(self) -> None:
        self.sequences = self.calls = 0
        self.problems: list[str] = []

    def run(self, task: str, cls: str, variant: str, config: dict[str, Any], calls: Seq, instances: int = 1) -> None:
        """Play `calls` on `instances` fresh instances per side, one after the other (2: the checker's
        model and ground-truth instances, sharing upstream's per-process state)."""
        _fresh_process()
        shared: dict[str, Any] = {}
        self.sequences += 1
        pairs = []
        for n in range(instances):
            official, ours = OFFICIAL[cls](), BACKENDS[cls]("official", shared)
            if hasattr(official, "_load_scenario"):  # MathAPI is stateless upstream: never loaded
                official._load_scenario(copy.deepcopy(config), long_context=True)
            ours.load(copy.deepcopy(config), long_context=True)
            pairs.append((official, ours))
            for i, call in enumerate(calls):
                self.calls += 1
                theirs = _outcome(lambda: getattr(official, call.name)(**copy.deepcopy(call.arguments)))
                mine = _outcome(lambda: ours.call(call.name, copy.deepcopy(call.arguments)))
                if theirs != mine:
                    self.problems.append(f"{task} {cls} [{variant}] instance {n} call {i} {call.name}({call.arguments!r}):\n"
                                         f"  official: {str(theirs)[:600]}\n  ours:     {str(mine)[:600]}")  # fmt: skip
                    return
            if cls == "GorillaFileSystem" and _outcome(official.pwd) != _outcome(ours.pwd):
                self.problems.append(f"{task} {cls} [{variant}] instance {n}: working directory differs")
            self._compare_state(f"{task} {cls} [{variant}] instance {n}", official, ours)
        if instances > 1:  # the first pair again, after the second played: what upstream shares shows here
            self._compare_state(f"{task} {cls} [{variant}] instance 0 at the end", *pairs[0])

    def _compare_state(self, where: str, official: Any, ours: Backend) -> None:
        want, got = _public(official), _public(ours)
        bad = sorted(k for k in want.keys() | got.keys() if k not in want or k not in got or not _same(want[k], got[k]))
        if bad:
            self.problems.append(f"{where}: state differs in {bad}:\n"
                                 f"  official: {str({k: want.get(k) for k in bad})[:600]}\n"
                                 f"  ours:     {str({k: got.get(k) for k in bad})[:600]}")  # fmt: skip

    def report(self, what: str) -> None:
        print(f"\n{what}: {self.sequences} sequences, {self.calls} calls compared, {len(self.problems)} disagreements")
        assert not self.problems, "\n".join(self.problems[:SHOWN])


# ---------------------------------------------------------------- perturbations
def alternatives(cls: str, value: Any) -> list[Any]:
    """Other values and types for an argument whose ground-truth value is `value` (the filler's ids among them)."""
    alts: list[Any] = [None, "", "abc", -1, -250.5, 0, 10**30, 1e308, [], [value], {}, {"k": value}, True]
    if isinstance(value, str):
        alts += [int(value) if value.isdigit() else 7, value.upper(), value + "x"]
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        alts += [str(value), -value, value * 1000]
    return [v for v in alts + FILLER_VALUES if not _guarded(cls, v)]


def _guarded(cls: str, value: Any) -> bool:
    """Whether `value` could meet one of our MathAPI's documented resource guards (precisions and
    powers upstream would compute for hours), where it answers differently on purpose."""
    number = value if isinstance(value, (int, float)) else int(value) if isinstance(value, str) and value.isdigit() else 0
    return cls == "MathAPI" and abs(number) > MAX_PRECISION


def systematic(cls: str, calls: Seq) -> Iterator[tuple[str, Seq]]:
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
            for j, alt in enumerate(alternatives(cls, value)):
                yield f"replace {i}.{key} #{j}", calls[:i] + [Call(call.name, {**call.arguments, key: alt})] + calls[i + 1:]


def record_values(cls: str, config: dict[str, Any], calls: Seq) -> list[Any]:
    """Values a random edit may reuse: the record's top-level keys and nested ids, its arguments, the filler's."""
    values: list[Any] = [k for v in config.values() if isinstance(v, dict) for k in v]
    values += [v for call in calls for v in call.arguments.values()]
    return [v for v in values + FILLER_VALUES if not _guarded(cls, v)]


def random_edit(rng: random.Random, cls: str, calls: Seq, pool: list[Any], extra: Seq) -> tuple[str, Seq]:
    """One random edit of `calls` (a short label, the edited list); "insert" picks from `extra`."""
    kind = rng.choice(["drop", "duplicate", "swap", "replace", "reuse", "remove", "unexpected", "insert", "insert"])
    if kind == "insert" or not calls:
        i = rng.randrange(len(calls) + 1)
        return "insert", calls[:i] + [rng.choice(extra)] + calls[i:]
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
        arguments = {**call.arguments, key: rng.choice(alternatives(cls, call.arguments[key]))}
    return kind, calls[:i] + [Call(call.name, arguments)] + calls[i + 1:]


def random_variants(task: str, cls: str, config: dict[str, Any], calls: Seq, extra: Seq) -> Iterator[tuple[str, Seq]]:
    pool = record_values(cls, config, calls)
    for n in range(RANDOM_PER_RECORD):
        rng = random.Random(f"{task}/{cls}/{n}")
        edited, labels = list(calls), []
        for _ in range(rng.randint(2, 4)):
            label, edited = random_edit(rng, cls, edited, pool, extra)
            labels.append(label)
        yield f"random {n} ({', '.join(labels)})", edited


def _for_state(calls: Seq, config: dict[str, Any]) -> Seq:
    """`calls` with the state's own access token (TravelAPI's filler calls are written with None)."""
    token = config.get("access_token")
    return [Call(c.name, {**c.arguments, "access_token": token}) if "access_token" in c.arguments else c for c in calls]


# ---------------------------------------------------------------- tests
def test_filler_values_are_upstreams() -> None:
    """Every filler value, in order and type (FILES_TAIL_USED is only ever looked up)."""
    for name, theirs in FILLER_SNAPSHOT.items():
        mine = getattr(ours_lc, name)
        if name == "FILES_TAIL_USED":
            assert mine == frozenset(theirs)
            continue
        assert repr(mine) == repr(theirs) and mine == theirs, name
        assert json.dumps(mine, default=repr) == json.dumps(theirs, default=repr), name


def test_records_and_perturbations(records: list[Record]) -> None:
    assert records, f"no records in {FILE}"
    tally = Tally()
    every: dict[str, Seq] = {}  # every ground-truth call per class: what a class without filler calls inserts
    for _, cls, _, calls in records:
        every.setdefault(cls, []).extend(calls)
    for task, cls, config, calls in records:
        for variant, edited in systematic(cls, calls):
            tally.run(task, cls, variant, config, edited)
        extra = _for_state(LC_CALLS.get(cls) or every[cls], config)
        for n, (variant, edited) in enumerate(random_variants(task, cls, config, calls, extra)):
            tally.run(task, cls, variant, config, edited)
            if n < PAIRED_PER_RECORD:
                tally.run(task, cls, f"checker pair, {variant}", config, edited, instances=2)
        tally.run(task, cls, "checker pair, ground truth", config, calls, instances=2)
    classes = sorted({cls for _, cls, _, _ in records})
    print(f"\n{len({r[0] for r in records})} records, {len(records)} (record, class) pairs over {classes}", end="")
    tally.report("ground truth and perturbations, long context")
    _filler_untouched()


def _filler_untouched() -> None:
    """Our side never writes into the filler; upstream's side only into `WRITTEN_FILLER`."""
    for name, saved in FILLER_SNAPSHOT.items():
        assert getattr(ours_lc, name) == (frozenset(saved) if name == "FILES_TAIL_USED" else saved), name
        if name not in WRITTEN_FILLER:
            assert getattr(official_lc, name) == saved, name


def test_filler_calls_on_fixed_states(records: list[Record]) -> None:
    """Each filler-reaching call alone and all in a row, on the default state and every record's;
    the TravelAPI ones also on a pair sharing the filler cards; the whole fare table."""
    tally = Tally()
    configs: dict[str, list[dict[str, Any]]] = {cls: [{}] for cls in LC_CALLS}
    for _, cls, config, _ in records:
        if cls in configs and config not in configs[cls]:
            configs[cls].append(config)
    for cls, filler_calls in LC_CALLS.items():
        for k, config in enumerate(configs[cls]):
            calls = _for_state(filler_calls, config)
            for i, call in enumerate(calls):
                tally.run("edge", cls, f"state {k}, call {i}", config, [call])
            tally.run("edge", cls, f"state {k}, all", config, calls)
            tally.run("edge", cls, f"state {k}, all twice, paired", config, calls + calls, instances=2)
    for frm in [*AIRPORTS, "PVG"]:
        for to in [*AIRPORTS, "PVG"]:
            for cls_name in ("economy", "business", "first", "coach"):
                for date in ("2024-03-01", "2024-03-02"):
                    arguments = dict(travel_from=frm, travel_to=to, travel_date=date, travel_class=cls_name)
                    tally.run("fares", "TravelAPI", f"{frm}-{to} {cls_name} {date}", {}, [
                        Call("get_flight_cost", arguments),
                        Call("book_flight", dict(arguments, access_token=None, card_id="4567890145678901"))])
    tally.report("filler-reaching calls on fixed states, long context")
    _filler_untouched()
