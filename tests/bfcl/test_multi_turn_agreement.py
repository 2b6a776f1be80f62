"""Our BFCL multi-turn backends and checker (`rules="official"`) against the official bfcl-eval code.

Run by scripts/bfcl_check.sh in its own environment. For each of the 200 tasks of `multi_turn_base`
(v3 and v4 data) and of v4's `miss_func`, `miss_param` and `long_context` (all eight backends)
this builds the ground-truth call sequence and systematic perturbations
of it: every call dropped, duplicated, swapped with the next, moved to the next turn; a turn's
calls made a turn early, instead of or as well as in their turn (so held-out functions are called
before the turn that reveals them, and a miss_param turn acts on a guess); every
argument given other values and types (strings for ints, ints for strings, None, lists, paths,
"..", empty strings, NaN, words followed by "(" inside strings), dropped or joined by an
unexpected one; logins removed; calls injected first and last from a per-class pool (`POOLS`:
calls before login, on missing files, into existing folders, wrong modes, maths edge cases,
unknown and refused names, deep nesting); folders moved or copied, then walked and written into;
tweets posted without mentions, then mentioned; and seeded random combinations of two to four
of these. Each sequence is run

1. live, turn by turn, as inference runs it: official `execute_multi_turn_func_call` against our
   `MultiTurnEpisode.step`; every output string must be equal;
2. scored: official `multi_turn_checker` against our `MultiTurnEpisode.verify`; the verdicts must
   agree, and so must every output the two checkers produced for the model's and the ground
   truth's calls.

Per task, the user turns our episode sends (`end_turn()`) must equal the official inference loop's
(`base_handler.inference_multi_turn_prompting`, the path of the Qwen FC handler: a miss_func reveal
turn carries `DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_PROMPTING` with the held-out docs), and
the names of the offered tools the official `load_dataset_entry` processing's (held-out ones removed).

Calls reach upstream as its Qwen FC handler writes them (``name(k=repr(v),...)``). Every sequence
runs as in a fresh Python process: instances left in `multi_turn_utils`' globals are dropped and
`TwitterAPI.post_tweet`'s mutable default lists reset, and the long-context filler upstream writes
into restored (a real run shares them across entries).
`pytest -s` prints the counts and any residual disagreement by task id with its reason.
With `BFCL_CHECK_SHARE` below 1 (as `make test-bfcl` runs it) each task's user turns and tools are still
compared, and a seeded share of its sequences (`bfcl_compare.sampled`, the ground truth always among them).
"""

from __future__ import annotations

import ast
import copy
import json
import math
import os
import random
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

checker_module = pytest.importorskip("bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker")
from bfcl_eval.constants.default_prompts import DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_PROMPTING  # noqa: E402
from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils  # noqa: E402
from bfcl_eval.eval_checker.multi_turn_eval.func_source_code import long_context as official_filler  # noqa: E402
from bfcl_eval.eval_checker.multi_turn_eval.func_source_code.posting_api import TwitterAPI  # noqa: E402
from bfcl_eval import utils as official_utils  # noqa: E402

from envsched_lightning.envs.base import ToolCall  # noqa: E402
from envsched_lightning.envs.bfcl.multi_turn import CATEGORIES, MODEL_NAME, MultiTurnEnvironment, replay  # noqa: E402
from tests.bfcl.bfcl_compare import SHARE, canonical, sampled  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(os.environ.get("ENVSCHED_DATA") or ROOT.parent / "shared" / "data")
RANDOM_PER_TASK = 60  # seeded random combinations per task, on top of the systematic variants

# Disagreements we accept, by (task id, variant) -> reason. Empty: every verdict and output agrees.
KNOWN_RESIDUALS: dict[tuple[str, str], str] = {}


# ---------------------------------------------------------------- official side
FILLER = copy.deepcopy({k: v for k, v in vars(official_filler).items() if k.isupper()})


def _fresh_process() -> None:
    """Forget what an earlier sequence left in upstream's process-wide state."""
    for name in [n for n in vars(multi_turn_utils) if n.endswith("_instance")]:
        del vars(multi_turn_utils)[name]
    TwitterAPI.post_tweet.__defaults__ = ([], [])
    for name, saved in FILLER.items():  # in place: upstream's classes hold these very objects
        live = getattr(official_filler, name)
        if live != saved and isinstance(live, (dict, list)):
            live.clear()
            (live.update if isinstance(live, dict) else live.extend)(copy.deepcopy(saved))


def _long_context(record: dict) -> bool:
    """Upstream's rule, in its inference loop and its checker alike."""
    category = record["id"].rsplit("_", 1)[0]
    return "long_context" in category or "composite" in category


def official_turns(records: list[dict], data_dir: Path, monkeypatch) -> dict[str, tuple[list[list[dict]], list[str]]]:
    """Per id: the user turns upstream's prompting inference loop sends, and the offered tool names
    (upstream's `load_dataset_entry` processing, reading the data folder's own function docs: v3's differ)."""
    monkeypatch.setattr(official_utils, "MULTI_TURN_FUNC_DOC_PATH", data_dir / "multi_turn_func_doc")
    entries = official_utils.add_language_specific_hint_to_function_doc(
        official_utils.populate_test_cases_with_predefined_functions(copy.deepcopy(records)))
    out = {}
    for entry in entries:
        held = entry.get("missed_function", {})
        turns = [[{"role": "user", "content": DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_PROMPTING.format(functions=held[str(t)])}]
                 if str(t) in held else messages for t, messages in enumerate(entry["question"])]  # fmt: skip
        out[entry["id"]] = turns, [f["name"] for f in entry["function"]]
    return out


def _call_text(call: ToolCall) -> str:
    """A call as upstream's `convert_to_function_call` writes it for execution."""
    return f"{call.name}({','.join(f'{k}={v!r}' for k, v in call.arguments.items())})"


def official_live(record: dict, model: list[list[ToolCall]]) -> list[list[str]]:
    _fresh_process()
    outputs = []
    for calls in model:
        results, _ = multi_turn_utils.execute_multi_turn_func_call(
            [_call_text(c) for c in calls], record["initial_config"], record["involved_classes"], MODEL_NAME,
            record["id"], long_context=_long_context(record), is_evaL_run=False,
        ) if calls else ([], None)  # fmt: skip
        outputs.append(results)
    return outputs


def official_check(record: dict, truth_texts: list[list[str]], model: list[list[ToolCall]], monkeypatch) -> tuple[bool, list, list]:
    """Upstream's verdict, and the outputs its checker rendered per turn for the model and the truth."""
    _fresh_process()
    events: list[tuple[bool, list[str]]] = []
    real = checker_module.execute_multi_turn_func_call

    def recording(*args: Any, **kwargs: Any):
        results, instances = real(*args, **kwargs)
        events.append((kwargs["model_name"].endswith("_ground_truth"), results))
        return results, instances

    monkeypatch.setattr(checker_module, "execute_multi_turn_func_call", recording)
    try:
        steps = [[[_call_text(c) for c in calls]] if calls else [] for calls in model]
        verdict = checker_module.multi_turn_checker(steps, truth_texts, copy.deepcopy(record), record["id"].rsplit("_", 1)[0],
                                                    MODEL_NAME)  # fmt: skip
    finally:
        monkeypatch.setattr(checker_module, "execute_multi_turn_func_call", real)
    model_out, truth_out = [], []
    for calls in model:
        if not events:
            break
        model_out.append(events.pop(0)[1] if calls else [])
        truth_out.append(events.pop(0)[1])
    return bool(verdict["valid"]), model_out, truth_out


# ---------------------------------------------------------------- sequences
def _names(record: dict) -> tuple[list[str], list[str]]:
    """File and folder names of the scenario's tree (all levels)."""
    files, folders = [], []
    root = record["initial_config"].get("GorillaFileSystem", {}).get("root", {})
    level = [next(iter(root.values())).get("contents", {})] if root else []
    while level:  # breadth first: names in the starting folder come first
        for entries in level:
            for name, node in entries.items():
                (files if node.get("type") == "file" else folders).append(name)
        level = [n.get("contents", {}) for entries in level for n in entries.values() if n.get("type") == "directory"]
    return files, folders


def _nested(depth: int) -> list:
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    return value


# Calls worth injecting, per class, as call texts ({f}: a file, {d}: a folder, {new}: the next tweet id).
POOLS = {
    "any": """no_such_tool() exit() ls() cd(folder='x')""",
    "GorillaFileSystem": """
        ls(a=True) pwd() cd(folder='..') cd(folder='/') cd(folder='.') cd(folder='{d}') cd(folder='{f}')
        cd(folder='{d}/x') cd(folder='nope') du() du(human_readable=True) find() find(name='txt') find(path='{d}')
        find(path='nope') touch(file_name='new.txt') touch(file_name='{f}') touch(file_name='a/b')
        mkdir(dir_name='newdir') mkdir(dir_name='{d}') echo(content='hi') echo(content='hi',file_name='new.txt')
        echo(content='hi',file_name='{f}') echo(content='run␣sort(x)␣now',file_name='{f}') echo(content='x',file_name='{d}')
        cat(file_name='{f}') cat(file_name='{d}') cat(file_name='nope') wc(file_name='{f}',mode='w')
        wc(file_name='{f}',mode='c') wc(file_name='{f}',mode='x') tail(file_name='{f}',lines=0) tail(file_name='{f}',lines=-1)
        tail(file_name='{f}',lines=99) sort(file_name='{f}') grep(file_name='{f}',pattern='a')
        diff(file_name1='{f}',file_name2='{f}') mv(source='{f}',destination='{d}') mv(source='{d}',destination='renamed')
        mv(source='{f}',destination='{f}') cp(source='{f}',destination='{d}') cp(source='{d}',destination='copied')
        cp(source='nope',destination='{d}') rm(file_name='{d}') rmdir(dir_name='{d}') rmdir(dir_name='{f}')""",
    "MessageAPI": """
        delete_message(receiver_id='USR002') send_message(receiver_id='USR002',message='hi') message_login(user_id='USR001')
        message_login(user_id='USR999') add_contact(user_name='Alice') add_contact(user_name='Zed') list_users()
        get_user_id(user='Bob') get_user_id(user='nobody') view_messages_sent() search_messages(keyword='file')
        get_message_stats() message_get_login_status() delete_message(receiver_id='USR002',message_id=1)
        delete_message(receiver_id='USR999')""",
    "TwitterAPI": """
        mention(tweet_id={new},mentioned_usernames=['@b']) post_tweet(content='y',tags=['#t'])
        comment(tweet_id={new},comment_content='c') get_tweet(tweet_id={new}) authenticate_twitter(username='john',password='wrong')
        post_tweet(content='x') mention(tweet_id=0,mentioned_usernames=['@a']) comment(tweet_id='0',comment_content='c')
        comment(tweet_id=0,comment_content='c') retweet(tweet_id=0) retweet(tweet_id=999) follow_user(username_to_follow='zed')
        unfollow_user(username_to_unfollow='alice') list_all_following() get_tweet(tweet_id=0) get_tweet(tweet_id=999)
        get_tweet_comments(tweet_id=0) get_user_tweets(username='john') search_tweets(keyword='a')
        get_user_stats(username='john') posting_get_login_status()""",
    "MathAPI": """
        logarithm(value='36.0',base=10,precision=5) logarithm(value=0,base=10,precision=4) logarithm(value=8,base=1,precision=4)
        logarithm(value=100,base=10,precision=0) square_root(number=-4,precision=3) square_root(number=2,precision=0)
        square_root(number=16.0,precision=5) square_root(number='16',precision=5) divide(a=1,b=0) mean(numbers=[])
        mean(numbers=[1,'a']) power(base=2,exponent=10) power(base=-8,exponent=0.5) round_number(number=2.5)
        percentage(part=1,whole=0) standard_deviation(numbers=[1,2,4]) min_value(numbers=[3,1]) max_value(numbers=[])
        sum_values(numbers=[1.5,2]) si_unit_conversion(value=5,unit_in='km',unit_out='cm') add(a='a',b='b')
        imperial_si_conversion(value=100,unit_in='celsius',unit_out='fahrenheit') multiply(a='a',b=2)
        absolute_value(number='x')""",
    "TicketAPI": """
        get_ticket(ticket_id=1) create_ticket(title='t') ticket_login(username='u',password='p') ticket_login(username='',password='p')
        create_ticket(title='t',description='d',priority=5) create_ticket(title='t',priority=9) create_ticket(title='t',priority='x')
        get_ticket(ticket_id=999) get_ticket(ticket_id='1') close_ticket(ticket_id=1) close_ticket(ticket_id=1)
        resolve_ticket(ticket_id=1,resolution='done') edit_ticket(ticket_id=1,updates={{'status':'open','priority':None}})
        edit_ticket(ticket_id=1,updates={{'nope':1}}) edit_ticket(ticket_id=999,updates={{}}) get_user_tickets()
        get_user_tickets(status='open') ticket_get_login_status() logout() logout()""",
    "TradingBot": """
        place_order(order_type='Buy',symbol='AAPL',price=1.0,amount=1) trading_login(username='u',password='p')
        place_order(order_type='Sell',symbol='NOPE',price=1.0,amount=1) place_order(order_type='Buy',symbol='AAPL',price=1e9,amount=9)
        cancel_order(order_id=12345) cancel_order(order_id=999) get_order_details(order_id=12345) get_order_details(order_id='x')
        fund_account(amount=-5) fund_account(amount=100) withdraw_funds(amount=1e12) withdraw_funds(amount=10)
        get_stock_info(symbol='NOPE') get_symbol_by_name(name='Apple') get_symbol_by_name(name='nobody')
        add_to_watchlist(stock='NOPE') remove_stock_from_watchlist(symbol='NOPE') get_watchlist() get_order_history()
        get_transaction_history(start_date='2024-01-01',end_date='2024-12-31') get_transaction_history(start_date='bad')
        get_available_stocks(sector='Technology') get_available_stocks(sector='nope') filter_stocks_by_price(stocks=['AAPL'],min_price=0,max_price=1e9)
        notify_price_change(stocks=['AAPL','NOPE'],threshold=0.1) get_account_info() get_current_time() trading_logout()""",
    "TravelAPI": """
        get_credit_card_balance(access_token='x',card_id='c') authenticate_travel(client_id='c',client_secret='s',refresh_token='r',grant_type='read_write',user_first_name='A',user_last_name='B')
        book_flight(access_token='x',card_id='nope',travel_date='2024-01-01',travel_from='JFK',travel_to='LAX',travel_class='economy')
        get_flight_cost(travel_from='JFK',travel_to='LAX',travel_date='2024-01-02',travel_class='first')
        get_flight_cost(travel_from='XXX',travel_to='LAX',travel_date='2024-01-02',travel_class='economy')
        get_flight_cost(travel_from='JFK',travel_to='LAX',travel_date='bad',travel_class='economy')
        compute_exchange_rate(base_currency='USD',target_currency='EUR',value=10) compute_exchange_rate(base_currency='EUR',target_currency='GBP',value=1)
        set_budget_limit(access_token='x',budget_limit=-1) cancel_booking(access_token='x',booking_id='nope') get_booking_history(access_token='x')
        retrieve_invoice(access_token='x',booking_id='nope') list_all_airports() get_nearest_airport_by_city(location='Nowhere')
        verify_traveler_information(first_name='A',last_name='B',date_of_birth='2020-01-01',passport_number='X1')
        contact_customer_support(booking_id='nope',message='hi') get_all_credit_cards() travel_get_login_status()
        get_budget_fiscal_year() purchase_insurance(access_token='x',insurance_type='comprehensive',booking_id='nope',insurance_cost=10.0,card_id='c')""",
    "VehicleControlAPI": """
        startEngine(ignitionMode='START') startEngine(ignitionMode='STOP') startEngine(ignitionMode='x') lockDoors(unlock=False,door=['driver','nope'])
        lockDoors(unlock=True,door=['driver']) pressBrakePedal(pedalPosition=1.0) pressBrakePedal(pedalPosition=2) releaseBrakePedal()
        fillFuelTank(fuelAmount=-1) fillFuelTank(fuelAmount=500) fillFuelTank(fuelAmount=5) setCruiseControl(speed=65,activate=True,distanceToNextVehicle=100)
        setCruiseControl(speed=7,activate=True,distanceToNextVehicle=100) activateParkingBrake(mode='engage') activateParkingBrake(mode='x')
        adjustClimateControl(temperature=70,unit='fahrenheit') adjustClimateControl(temperature=20,unit='x',fanSpeed=200)
        setHeadlights(mode='on') setHeadlights(mode='x') displayCarStatus(option='doors') displayCarStatus(option='x')
        set_navigation(destination='x') estimate_distance(cityA='83214',cityB='74532') estimate_distance(cityA='1',cityB='2')
        estimate_drive_feasibility_by_mileage(distance=1e6) gallon_to_liter(gallon=-1) liter_to_gallon(liter='x')
        get_zipcode_based_on_city(city='Nowhere') check_tire_pressure() find_nearest_tire_shop() get_current_speed()
        get_outside_temperature_from_google() get_outside_temperature_from_weather_com() display_log(messages=['a'])""",
}  # a text is split on whitespace, so "␣" stands for a space inside a string


def _nested(depth: int) -> list:
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    return value


def pool(record: dict) -> list[ToolCall]:
    """Calls worth injecting for this record's classes: edge cases of each tool."""
    files, folders = _names(record)
    names = {"f": (files + ["a.txt"])[0], "d": (folders + ["docs"])[0],
             "new": record["initial_config"].get("TwitterAPI", {}).get("tweet_counter", 0)}  # fmt: skip
    calls = []
    for cls in ["any", *record["involved_classes"]]:
        for text in POOLS[cls].format(**names).split():
            node = ast.parse(text.replace("␣", " "), mode="eval").body
            calls.append(ToolCall(node.func.id, {kw.arg: ast.literal_eval(kw.value) for kw in node.keywords}))
    deep = [ToolCall("echo", {"content": _nested(199)}), ToolCall("echo", {"content": _nested(200)})]
    return calls + deep


def variants(value: Any) -> list[Any]:
    """Other values and types for one argument."""
    if isinstance(value, bool):
        return [not value, str(value), 1, None]
    if isinstance(value, int):
        return [value + 1, value - 1, 0, str(value), float(value), None, [value], float("nan")]
    if isinstance(value, float):
        return [value + 1, -value, str(value), int(value), 0.0, None, float("inf")] if math.isfinite(value) else [0.0, 1]
    if isinstance(value, str):
        return [value + "_x", "", value.upper(), "..", "/", "a/b", "nope.txt", "None", 0, None, [value], f"see sort({value})", f"{value} (v2)"]
    if isinstance(value, list):
        return [[], list(reversed(value)), value + ["extra"], str(value), [str(v) for v in value], None]
    return ["x", None]


def _copy(turns: list[list[ToolCall]]) -> list[list[ToolCall]]:
    return [list(t) for t in turns]


def systematic(record: dict, truth: list[list[ToolCall]], extra: list[ToolCall]) -> Iterator[tuple[str, list[list[ToolCall]]]]:
    yield "truth", _copy(truth)
    positions = [(t, i) for t, turn in enumerate(truth) for i in range(len(turn))]
    for t, i in positions:
        call = truth[t][i]
        out = _copy(truth)
        del out[t][i]
        yield f"drop {t}.{i}", out
        out = _copy(truth)
        out[t].insert(i, call)
        yield f"duplicate {t}.{i}", out
        if i + 1 < len(truth[t]):
            out = _copy(truth)
            out[t][i], out[t][i + 1] = out[t][i + 1], out[t][i]
            yield f"swap {t}.{i}", out
        if t + 1 < len(truth):
            out = _copy(truth)
            out[t + 1].insert(0, out[t].pop(i))
            yield f"to next turn {t}.{i}", out
        for key, value in call.arguments.items():
            for j, other in enumerate(variants(value)):
                out = _copy(truth)
                out[t][i] = ToolCall(call.name, {**call.arguments, key: other})
                yield f"arg {t}.{i}.{key}#{j}", out
            out = _copy(truth)
            out[t][i] = ToolCall(call.name, {k: v for k, v in call.arguments.items() if k != key})
            yield f"no arg {t}.{i}.{key}", out
        out = _copy(truth)
        out[t][i] = ToolCall(call.name, {**call.arguments, "unexpected": 1})
        yield f"extra arg {t}.{i}", out
    for t in range(1, len(truth)):  # a turn's calls made a turn early: instead of, or as well as, in their turn
        if truth[t]:
            out = _copy(truth)
            out[t - 1] += out[t]
            yield f"early {t}", out
            out = _copy(out)
            out[t] = []
            yield f"only early {t}", out
    counter = record["initial_config"].get("TwitterAPI", {}).get("tweet_counter", 0)
    for t in range(len(truth)):  # after a turn that posts: post without mentions, mention it, post again
        posted = sum(c.name == "post_tweet" for turn in truth[: t + 1] for c in turn)
        if posted and any(c.name == "post_tweet" for c in truth[t]):
            out = _copy(truth)
            out[t] += [ToolCall("post_tweet", {"content": "a"}),
                       ToolCall("mention", {"tweet_id": counter + posted, "mentioned_usernames": ["@z"]}),
                       ToolCall("post_tweet", {"content": "b"}), ToolCall("get_tweet", {"tweet_id": counter + posted})]  # fmt: skip
            yield f"shared mentions {t}", out
    root = record["initial_config"].get("GorillaFileSystem", {}).get("root", {})
    top = next(iter(root.values()), {}).get("contents", {})
    for d, node in top.items():  # moved/copied folders share objects: walk and write inside them
        if node.get("type") != "directory":
            continue
        kids = node.get("contents", {})
        sub = next((k for k, v in kids.items() if v.get("type") == "directory"), "nope")
        f = next((k for k, v in kids.items() if v.get("type") == "file"), "nope")
        c = ToolCall
        for verb, new in (("mv", "renamed"), ("cp", "copied")):
            out = _copy(truth)
            out[0][:0] = [c(verb, {"source": d, "destination": new}), c("cd", {"folder": new}),
                          c("echo", {"content": "z", "file_name": f}), c("cd", {"folder": sub}), c("pwd", {}),
                          c("cd", {"folder": ".."}), c("pwd", {}), c("cd", {"folder": ".."}), c("pwd", {}), c("ls", {}),
                          c("cd", {"folder": d}), c("cat", {"file_name": f}), c("cd", {"folder": "/"}), c("find", {}),
                          c("du", {})]  # fmt: skip
            yield f"{verb} folder {d}", out
    logins = {"authenticate_twitter", "message_login"}
    if any(c.name in logins for turn in truth for c in turn):
        yield "no login", [[c for c in turn if c.name not in logins] for turn in truth]
    for k, call in enumerate(extra):
        out = _copy(truth)
        out[0].insert(0, call)  # before anything, logins included
        yield f"first {k}:{call.name}", out
        out = _copy(truth)
        out[-1].append(call)
        yield f"last {k}:{call.name}", out


def random_combo(truth: list[list[ToolCall]], extra: list[ToolCall], rng: random.Random) -> list[list[ToolCall]]:
    out = _copy(truth)
    for _ in range(rng.randint(2, 4)):
        t = rng.randrange(len(out))
        op = rng.choice(["drop", "dup", "inject", "inject", "arg", "move", "empty"])
        if op == "inject" or not out[t]:
            out[t].insert(rng.randint(0, len(out[t])), rng.choice(extra))
        elif op == "drop":
            del out[t][rng.randrange(len(out[t]))]
        elif op == "dup":
            i = rng.randrange(len(out[t]))
            out[t].insert(i, out[t][i])
        elif op == "move" and t + 1 < len(out):
            out[t + 1].insert(0, out[t].pop(rng.randrange(len(out[t]))))
        elif op == "empty":
            out[t] = []
        elif op == "arg":
            i = rng.randrange(len(out[t]))
            call = out[t][i]
            if call.arguments:
                key = rng.choice(sorted(call.arguments))
                out[t][i] = ToolCall(call.name, {**call.arguments, key: rng.choice(variants(call.arguments[key]))})
    return out


# ---------------------------------------------------------------- the test
def ours_live(env: MultiTurnEnvironment, task, model: list[list[ToolCall]]) -> tuple[list[list[str]], float, str, list]:
    """Our episode played turn by turn: the texts the model reads, the verdict, and the user turns it sent."""
    episode = env.reset(task)
    outputs, user_turns = [], [list(task.messages)]
    for t, calls in enumerate(model):
        outputs.append([r.content for r in episode.step(calls)] if calls else [])
        if t + 1 < len(model):
            user_turns.append(list(episode.end_turn() or []))
    verdict = episode.verify("")
    return outputs, verdict.reward, verdict.reason, user_turns


def canonical_outputs(outputs: list[list[str]]) -> list[list[str]]:
    return [[canonical(out) for out in turn] for turn in outputs]


def first_difference(ours: list[list[str]], theirs: list[list[str]]) -> str:
    for t, (x, y) in enumerate(zip(ours, theirs)):
        for i, (a, b) in enumerate(zip(x, y)):
            if a != b:
                return f"turn {t} call {i}: ours {a[:160]!r} official {b[:160]!r}"
        if len(x) != len(y):
            return f"turn {t}: {len(x)} outputs, official {len(y)}"
    return f"{len(ours)} turns, official {len(theirs)}"


@pytest.mark.parametrize("category", CATEGORIES)
def test_verdicts_and_outputs_agree_with_the_official_code(data_root, category, monkeypatch, capsys) -> None:
    root, version = data_root
    if version == "v3" and category != "base":
        pytest.skip(f"multi_turn_{category} exists in v4 data only")
    env = MultiTurnEnvironment(root, version=version, category=category)
    answer_file = env.data_dir / "possible_answer" / f"BFCL_{version}_multi_turn_{category}.json"
    answers = {json.loads(line)["id"]: json.loads(line)["ground_truth"] for line in answer_file.open()}
    prompts = official_turns([t.ground_truth["record"] for t in env.tasks()], env.data_dir, monkeypatch)
    counts: Counter[str] = Counter()
    residuals: list[tuple[str, str, str, str]] = []
    for task in env.tasks():
        record, truth = task.ground_truth["record"], task.ground_truth["calls"]
        if len(record["question"]) != len(truth):  # v3 multi_turn_base_154: 6 answer turns for 5 user turns.
            # Inference can only produce 5 turns, which upstream's checker fails ("force terminated"), as ours
            # does; handing that checker 6 model turns directly would compare with no run that can happen.
            _, reward, reason, _ = ours_live(env, task, truth)
            assert reward == 0.0 and "force terminated" in reason, (record["id"], reason)
            counts["unplayable records"] += 1
            continue
        tid, extra, rng = record["id"], pool(record), random.Random(record["id"])
        their_turns, their_tools = prompts[tid]
        if [t["function"]["name"] for t in env.tools_for(task)] != their_tools:
            residuals.append((tid, "tools", f"offered {list(task.spec.tools)}, official {their_tools}", ""))
        sent_turns = ours_live(env, task, truth)[3]
        counts["user turns compared"] += len(their_turns)
        if sent_turns != their_turns:
            residuals.append((tid, "user turns", f"sent {str(sent_turns)[:300]}, official {str(their_turns)[:300]}", ""))
        seqs = list(systematic(record, truth, extra))
        seqs += [(f"random {k}", random_combo(truth, extra, rng)) for k in range(RANDOM_PER_TASK)]
        for variant, model in sampled(seqs, tid):
            theirs_live = official_live(record, model)
            valid, theirs_model, theirs_truth = official_check(record, answers[tid], model, monkeypatch)
            live, reward, reason, _ = ours_live(env, task, model)
            mine = replay(record, truth, model)
            problems = [] if (reward == 1.0) == valid else [f"verdict ours {reward} ({reason}), official {valid}"]
            for what, ours, theirs in (("live", live, theirs_live), ("checker model", mine.model_outputs, theirs_model),
                                       ("checker truth", mine.truth_outputs, theirs_truth)):  # fmt: skip
                counts["outputs compared"] += sum(map(len, theirs))
                ours, theirs = canonical_outputs(ours), canonical_outputs(theirs)
                if ours != theirs:
                    problems.append(f"{what} output differs at {first_difference(ours, theirs)}")
            counts["sequences"] += 1
            counts["official pass"] += valid
            if problems and (tid, variant) not in KNOWN_RESIDUALS:
                calls = " | ".join(_call_text(c) for turn in model for c in turn)
                residuals.append((tid, variant, "; ".join(problems), calls[:300]))
    with capsys.disabled():
        print(f"\nmulti-turn agreement ({version} {category}, share {SHARE:g}): {dict(counts)}; disagreements: {len(residuals)}")
        for tid, variant, why, calls in residuals[:40]:
            print(f"  {tid} [{variant}] {why}\n      calls: {calls}")
    assert not residuals, f"{len(residuals)} disagreements, first: {residuals[0]}"
