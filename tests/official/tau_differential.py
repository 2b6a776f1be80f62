"""Differential check of our tau-bench tools against the official ones (not part of the test suite).

Loads the official tool modules, `Env` and task lists from a git snapshot of sierra-research/tau-bench
(plain Python over the JSON data; the LLM user module is replaced by a silent stub, nothing else is
changed) and runs the same action lists through both sides: every task's ground-truth actions (our
shipped tasks and the official airline test, retail test/train/dev tasks) and perturbations of them
(a repeated or dropped write, certificates/gift cards as payment, bad ids and arguments, read-tool
probes, extra writes on the task's user, a transfer to a human agent mid-way). It compares every tool
output string, the final database (official hash of each side) and the reward (the official reward
from `Env.calculate_reward` with the agent's reply as a `respond` action, against our `verify`).

Usage: python tests/official/tau_differential.py [--git PATH] [--data DIR] [--split all|ours|test] [--max-tasks N]
"""

from __future__ import annotations

import argparse
import warnings
import copy
import importlib
import io
import json
import os
import sys
import tarfile
import tempfile
import types
from collections import Counter
from pathlib import Path
from subprocess import run
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from envsched_lightning.envs.tau.environment import TERMINATE, TauEnvironment, TauEpisode  # noqa: E402
from envsched_lightning.envs.base import ToolCall  # noqa: E402

USER_STUB = '''
import enum
class UserStrategy(enum.Enum):
    HUMAN = "human"
    LLM = "llm"
class _Silent:
    def reset(self, instruction=None): return ""
    def step(self, content): return ""
    def get_total_cost(self): return 0.0
def load_user(user_strategy, model=None, provider=None): return _Silent()
'''
TASK_MODULES = {"airline": ["tasks_test"], "retail": ["tasks_test", "tasks_train", "tasks_dev"]}
FILES = {"airline": ("flights", "reservations", "users"), "retail": ("orders", "products", "users")}
EXPRESSIONS = ["2 + 2", "(100 - 15) * 0.9", "7 // 2", "2 ** 0.5", "1/0", "1.0/0", "10**400", "()", "...", "1(2)", "01",
               "", "  3", "2*(3+4", "abc", "1e5", "(-8)**0.5", "0**-1", "3+", "-" * 150 + "1", "(" * 201 + "1" + ")" * 201,
               "123.456 * 3", "1 2"]  # fmt: skip


def load_official(git_dir: str, workdir: Path) -> types.ModuleType:
    """Unpack tau_bench/envs and types.py, stub the package inits and the user simulator, import."""
    tar = run(["git", f"--git-dir={git_dir}", "archive", "HEAD", "tau_bench/envs", "tau_bench/types.py"], capture_output=True, check=True).stdout
    tarfile.open(fileobj=io.BytesIO(tar)).extractall(workdir, filter="data")
    pkg = workdir / "tau_bench"
    for init in [pkg / "__init__.py", pkg / "envs" / "__init__.py", pkg / "envs" / "airline" / "__init__.py", pkg / "envs" / "retail" / "__init__.py"]:
        init.write_text("")
    (pkg / "envs" / "user.py").write_text(USER_STUB)
    sys.path.insert(0, str(workdir))
    return importlib.import_module("tau_bench.envs.base")


class Side:
    """One domain on both sides: the official Env over cached data, and our environment."""

    def __init__(self, base: types.ModuleType, domain: str, data_dir: Path) -> None:
        self.base, self.domain = base, domain
        folder = data_dir / "tau_bench" / domain / "data"
        texts = {f: (folder / f"{f}.json").read_text() for f in FILES[domain]}
        self.pristine = {f: json.loads(text) for f, text in texts.items()}
        tools = importlib.import_module(f"tau_bench.envs.{domain}.tools").ALL_TOOLS
        types_mod = importlib.import_module("tau_bench.types")
        self.Action = types_mod.Action
        dummy = types_mod.Task(user_id="x", actions=[], instruction="", outputs=[])
        self.env = base.Env(data_load_func=lambda: {f: json.loads(t) for f, t in texts.items()}, tools=tools, tasks=[dummy], wiki="",
                            rules=[], user_strategy="human", user_model="none", task_index=0)  # fmt: skip
        self.env.terminate_tools = [TERMINATE]
        self.ours = TauEnvironment(domain, data_dir)
        self.ours_gt: dict[str, str] = {}

    def same_state(self, official: dict[str, Any], tools: Any) -> bool:
        """Official-hash equality of the two databases, record by record: only records that either
        side touched, or whose value differs from the pristine data, are hashed (a full hash costs 0.3 s)."""
        if sorted(official) != sorted(tools.data):
            return False
        for table, rows in official.items():
            mine, pristine = tools.data[table], self.pristine[table]
            if sorted(rows) != sorted(mine):
                return False
            touched = set(mine.own) | {k for k, v in rows.items() if k not in pristine or v != pristine[k]}
            for key in touched:
                ours = mine.own.get(key, pristine.get(key))
                if str(self.base.to_hashable(rows[key])) != str(self.base.to_hashable(ours)):
                    return False
        return True

    def run(self, task: dict[str, Any], variant: str, actions: list[dict[str, Any]], answer: str, stats: Counter, log: list) -> None:
        env, key = self.env, task["task_id"]
        env.tasks = [self._official_task(task)]
        env.reset(0)
        tools = self.ours.fresh_tools()
        if key not in self.ours_gt:  # our replay, errors allowed as upstream (ours refuses such tasks at load)
            gt = self.ours.fresh_tools()
            for a in task["actions"]:
                if a["name"] != TERMINATE:
                    gt.execute(a["name"], copy.deepcopy(a["kwargs"]))
            self.ours_gt[key] = gt.hash()
        episode = TauEpisode(tools, task, self.ours_gt[key])
        done = crashed = False
        for a in actions:
            if done or crashed:
                break
            (mine,) = episode.step([ToolCall(a["name"], copy.deepcopy(a["kwargs"]))])
            before = copy.deepcopy(env.data) if a["name"] == TERMINATE else None
            try:
                response = env.step(self.Action(name=a["name"], kwargs=copy.deepcopy(a["kwargs"])))
                observation, done = response.observation, response.done
                if done:  # Env.step already scored the episode, replacing env.data by the ground-truth replay
                    final_reward, final_data = response.reward, before
            except Exception as exc:  # noqa: BLE001 - upstream's run.py scores such a task 0
                observation, crashed = f"<crash: {type(exc).__name__}>", True
            same = observation == mine.content or (crashed and episode.aborted)
            stats["outputs"] += 1
            stats["outputs_same"] += same
            stats["official_crashes"] += crashed
            if not same:
                log.append((key, variant, a["name"], str(observation)[:300], mine.content[:300]))
        same_state = self.same_state(final_data if done else env.data, tools)
        stats["states"] += 1
        stats["states_same"] += same_state
        if not same_state:
            log.append((key, variant, "state", "", ""))
        if not (done or crashed):  # the agent's reply; after a transfer upstream has no reply
            env.step(self.Action(name="respond", kwargs={"content": answer}))
        official = 0.0 if crashed else final_reward if done else env.calculate_reward().reward
        ours = episode.verify(answer).reward
        stats["rewards"] += 1
        stats["rewards_same"] += official == ours
        stats[f"rewards_same_{variant.split('_')[0]}"] += official == ours
        stats[f"official_reward_{official:.0f}"] += 1
        if official != ours:
            log.append((key, variant, "reward", official, ours))

    def _official_task(self, task: dict[str, Any]) -> Any:
        actions = [self.Action(name=a["name"], kwargs=copy.deepcopy(a["kwargs"])) for a in task["actions"]]
        return importlib.import_module("tau_bench.types").Task(user_id=task.get("user_id", ""), actions=actions,
                                                               instruction=task["instruction"], outputs=task.get("outputs", []))  # fmt: skip


# ---------------------------------------------------------------- perturbations
def _act(name: str, **kwargs: Any) -> dict[str, Any]:
    return {"name": name, "kwargs": kwargs}


def _methods(side: Side, user_id: str) -> dict[str, Any]:
    return side.pristine["users"].get(user_id, {}).get("payment_methods", {})


def _payment_swaps(side: Side, action: dict[str, Any], user_id: str) -> list[dict[str, Any]]:
    """The action paid with each other kind of the user's payment methods."""
    field = "payment_id" if "payment_id" in action["kwargs"] else "payment_method_id" if "payment_method_id" in action["kwargs"] else None
    if field is None:
        return []
    by_source: dict[str, str] = {}
    for pid, m in _methods(side, user_id).items():
        by_source.setdefault(m["source"], pid)
    return [{"name": action["name"], "kwargs": {**action["kwargs"], field: pid}} for pid in by_source.values() if pid != action["kwargs"][field]]


def _probes(side: Side, task: dict[str, Any]) -> list[dict[str, Any]]:
    user_id = task.get("user_id") or next((a["kwargs"].get("user_id") for a in task["actions"] if "user_id" in a["kwargs"]), "")
    user = side.pristine["users"].get(user_id, {})
    out = [_act("calculate", expression=e) for e in EXPRESSIONS] + [_act("think", thought="hm"), _act("get_user_details", user_id=user_id),
           _act("get_user_details", user_id="nobody_0000")]  # fmt: skip
    if side.domain == "airline":
        out += [_act("list_all_airports"), _act("get_reservation_details", reservation_id="ZZZZZZ")]
        for rid in user.get("reservations", [])[:3]:
            r = side.pristine["reservations"][rid]
            out.append(_act("get_reservation_details", reservation_id=rid))
            for day in ("2024-05-05", "2024-05-09", "2024-05-16", "2024-05-23", "2024-05-30"):
                out += [_act("search_direct_flight", origin=r["origin"], destination=r["destination"], date=day),
                        _act("search_onestop_flight", origin=r["origin"], destination=r["destination"], date=day)]  # fmt: skip
    else:
        name = user.get("name", {})
        out += [_act("list_all_product_types"), _act("find_user_id_by_email", email=user.get("email", "x@y").upper()),
                _act("find_user_id_by_email", email="nobody@example.com"), _act("get_order_details", order_id="#W0000000"),
                _act("find_user_id_by_name_zip", first_name=name.get("first_name", "A"), last_name=name.get("last_name", "B"),
                     zip=user.get("address", {}).get("zip", "0")), _act("get_product_details", product_id="nope")]  # fmt: skip
        for oid in user.get("orders", [])[:3]:
            out.append(_act("get_order_details", order_id=oid))
            for item in side.pristine["orders"][oid]["items"][:2]:
                out.append(_act("get_product_details", product_id=item["product_id"]))
    return out


def _extra_writes(side: Side, task: dict[str, Any]) -> list[dict[str, Any]]:
    """Writes on the task user's own records that exercise every write tool's checks and quirks."""
    user_id = task.get("user_id", "")
    user = side.pristine["users"].get(user_id)
    if user is None:
        return []
    methods = list(user["payment_methods"])
    out: list[dict[str, Any]] = []
    if side.domain == "airline":
        for rid in user["reservations"][:2]:
            r = side.pristine["reservations"][rid]
            legs = [{"flight_number": f["flight_number"], "date": f["date"]} for f in r["flights"]]
            for pid in methods:
                out.append(_act("update_reservation_baggages", reservation_id=rid, total_baggages=r["total_baggages"] + 1,
                                nonfree_baggages=r["nonfree_baggages"] + 1, payment_id=pid))  # fmt: skip
            for cabin in ("business", "economy", "basic_economy", r["cabin"]):
                out.append(_act("update_reservation_flights", reservation_id=rid, cabin=cabin, flights=legs, payment_id=methods[0]))
            out += [_act("update_reservation_passengers", reservation_id=rid, passengers=r["passengers"][:1]),
                    _act("update_reservation_passengers", reservation_id=rid, passengers=r["passengers"]),
                    _act("cancel_reservation", reservation_id=rid), _act("cancel_reservation", reservation_id=rid)]  # fmt: skip
        for _ in range(4):
            out.append(_act("send_certificate", user_id=user_id, amount=50))
        if user["reservations"]:
            r = side.pristine["reservations"][user["reservations"][0]]
            legs = [{"flight_number": f["flight_number"], "date": f["date"]} for f in r["flights"]]
            for pid in methods:
                out.append(_act("book_reservation", user_id=user_id, origin=r["origin"], destination=r["destination"],
                                flight_type=r["flight_type"], cabin="economy", flights=legs, passengers=r["passengers"],
                                payment_methods=[{"payment_id": pid, "amount": 100}], total_baggages=0, nonfree_baggages=0,
                                insurance="no"))  # fmt: skip
    else:
        for oid in user["orders"][:3]:
            o = side.pristine["orders"][oid]
            items = [i["item_id"] for i in o["items"]]
            variants = [next((v for v in side.pristine["products"][i["product_id"]]["variants"] if v != i["item_id"]), i["item_id"])
                        for i in o["items"]]  # fmt: skip
            for pid in methods:
                out += [_act("modify_pending_order_items", order_id=oid, item_ids=items[:1], new_item_ids=variants[:1], payment_method_id=pid),
                        _act("exchange_delivered_order_items", order_id=oid, item_ids=items, new_item_ids=variants, payment_method_id=pid),
                        _act("return_delivered_order_items", order_id=oid, item_ids=items[:1], payment_method_id=pid),
                        _act("modify_pending_order_payment", order_id=oid, payment_method_id=pid)]  # fmt: skip
            out += [_act("modify_pending_order_address", order_id=oid, address1="1 Main St", address2="", city="X", state="CA",
                         country="USA", zip="90000"),
                    _act("return_delivered_order_items", order_id=oid, item_ids=[], payment_method_id=methods[0]),
                    _act("cancel_pending_order", order_id=oid, reason="just because"),
                    _act("cancel_pending_order", order_id=oid, reason="no longer needed")]  # fmt: skip
        out.append(_act("modify_user_address", user_id=user_id, address1="1 Main St", address2="", city="X", state="CA", country="USA", zip="90000"))
    return out


def variants(side: Side, task: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    actions = task["actions"]
    writes = [i for i, a in enumerate(actions) if a["name"] not in {"respond"} and not a["name"].startswith(("get_", "find_", "list_", "search_", "calculate", "think"))]
    out = {"gt": actions}
    if writes:
        last = writes[-1]
        out["repeat_write"] = actions[: last + 1] + [actions[last]] + actions[last + 1 :]
        out["drop_write"] = actions[:last] + actions[last + 1 :]
        bad = actions[last]
        kw = bad["kwargs"]
        broken = [{"name": bad["name"], "kwargs": {k: v for k, v in list(kw.items())[:-1]}},
                  {"name": bad["name"], "kwargs": {**kw, "bogus": 1}}, {"name": bad["name"], "kwargs": {**kw, "data": 1}},
                  {"name": bad["name"], "kwargs": {k: ("ZZZZZZ" if k.endswith("_id") else v) for k, v in kw.items()}},
                  {"name": "no_such_tool", "kwargs": {}}]  # fmt: skip
        out["bad_args"] = broken + actions
        for i, swap in enumerate(_payment_swaps(side, bad, task.get("user_id", ""))):
            out[f"payment_{i}"] = actions[:last] + [swap] + actions[last + 1 :]
        out["transfer"] = actions[:last] + [_act(TERMINATE, summary="help")] + actions[last:]
    out["probe"] = _probes(side, task) + actions
    out["extra_writes"] = actions + _extra_writes(side, task)
    return out


def load_tasks(domain: str, split: str) -> list[dict[str, Any]]:
    ours = [json.loads(line) for line in (ROOT / "envsched_lightning" / "envs" / "tau" / "tasks" / f"{domain}.jsonl").read_text().splitlines()]
    if split == "ours":
        return ours
    official = []
    for module in TASK_MODULES[domain] if split == "all" else ["tasks_test"]:
        mod = importlib.import_module(f"tau_bench.envs.{domain}.{module}")
        listed = next(v for k, v in vars(mod).items() if k.startswith("TASKS"))
        for i, t in enumerate(listed):
            official.append({"task_id": f"official_{module}_{i}", "user_id": t.user_id, "instruction": t.instruction,
                             "actions": [a.model_dump() for a in t.actions], "outputs": list(t.outputs)})  # fmt: skip
    return ours + official


def main() -> None:
    warnings.filterwarnings("ignore", category=SyntaxWarning)  # "1(2)" is one of the probed expressions
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--git", default=os.environ.get("TAU_BENCH_GIT", "/work/.mirror/sierra-research+tau-bench/repo"))
    ap.add_argument("--data", default=os.environ.get("ENVSCHED_DATA", str(ROOT.parent / "shared" / "data")))
    ap.add_argument("--split", choices=["all", "ours", "test"], default="all")
    ap.add_argument("--max-tasks", type=int, default=0, help="per domain; 0 = all")
    ap.add_argument("--show", type=int, default=20, help="differences to print")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = load_official(args.git, Path(tmp))
        total, log = Counter(), []
        for domain in ("airline", "retail"):
            side, stats = Side(base, domain, Path(args.data)), Counter()
            tasks = load_tasks(domain, args.split)
            for task in tasks[: args.max_tasks or None]:
                for name, actions in variants(side, task).items():
                    answer = "Done. " + " ".join(task.get("outputs", []))
                    side.run(task, name, actions, answer, stats, log)
                    stats[f"variant_{name.split('_')[0]}"] += 1
            print(domain, dict(sorted(stats.items())), flush=True)
            total.update(stats)
        for what in ("outputs", "states", "rewards"):
            print(f"{what}: {total[what + '_same']}/{total[what]} agree ({100 * total[what + '_same'] / max(total[what], 1):.2f}%)")
        for entry in log[: args.show]:
            print("DIFF", entry)
        print(f"{len(log)} differences")


if __name__ == "__main__":
    main()
