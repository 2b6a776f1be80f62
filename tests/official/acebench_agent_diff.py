"""Differential check: our ACEBench-Agent sandboxes and scores against upstream's own code, on agent message paths.

    .venv/bin/python tests/official/acebench_agent_diff.py SNAPSHOT [--data DIR] [--record FILE] [--show N]

SNAPSHOT is a checkout of chenchen0103/ACEBench or its bare git directory (read with `git archive`).
Upstream's inference loops (`multi_step_inference`, `multi_turn_inference` of
`model_inference/common_inference.py`) run as written with upstream's agent classes, execution roles,
sandboxes and scenes; only the model is replaced by one that answers with the path's next message,
and the user of multi_turn by our `ScriptedUser`. Their result goes through JSON as upstream's result
file does, then through upstream's `agent_eval` and `agent_eval_process` (file writing stubbed).
The same messages are played through our environment (`acebench_agent_*`, as text turns).

Paths per task: the possible answer's milestones as written (some are not valid Python: upstream's
own loop fails on them too), the same calls re-written as valid Python, and perturbations of those:
each call dropped, each repeated, neighbours swapped, the first value of each call changed, a
question to the user inserted, and no message at all; and 16 random paths of the task's tools with values
from the worlds' own names and ids (right and wrong ones, arguments sometimes missing). Compared: the end state (saved attributes),
the end-state verdict and the process accuracy. `--record FILE` writes upstream's results for every
path to FILE, which `tests/envs/test_acebench_agent.py` replays against our code in the default suite.
"""

from __future__ import annotations

import argparse
import ast
import copy
import hashlib
import importlib
import inspect
import io
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import types
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from envsched_lightning.envs.acebench.agent import CATEGORIES, AceBenchAgentEnvironment, FINISH, DecodeFailure, call_text, decode_agent_message  # noqa: E402
from envsched_lightning.envs.base import ToolCall, next_turn  # noqa: E402
from envsched_lightning.envs.users import ScriptedUser  # noqa: E402

QUESTION = "Which account should I use for this?"
_WORD_APOSTROPHE = re.compile(r"(?<=[A-Za-z])'(?=[a-z])")  # Domino's, Don't: an apostrophe inside a word


def snapshot_dir(path: str) -> str:
    """A checkout folder: `path` itself, or a bare git directory extracted into a temporary folder."""
    if os.path.isfile(os.path.join(path, "eval_main.py")):
        return path
    out = tempfile.mkdtemp(prefix="acebench_snapshot_")
    archive = subprocess.run(["git", "--git-dir", path, "archive", "HEAD", "eval_main.py", "model_eval", "model_inference"],
                             check=True, capture_output=True).stdout  # fmt: skip
    subprocess.run(["tar", "-x", "-C", out], input=archive, check=True)
    return out


def _functions(root: str, file: str, wanted: set[str], namespace: dict[str, Any], inside: str | None = None) -> None:
    """Define upstream's functions `wanted` (module level, or methods of class `inside`) in `namespace`, unchanged."""
    tree = ast.parse(Path(root, file).read_text(encoding="utf-8"))
    body = tree.body if inside is None else next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == inside).body
    nodes = [n for n in body if (isinstance(n, ast.FunctionDef) and n.name in wanted)
             or (isinstance(n, ast.Assign) and any(getattr(t, "id", "") in wanted for t in n.targets))]  # fmt: skip
    exec(compile(ast.Module(nodes, []), file, "exec"), namespace)  # noqa: S102 - upstream's code, run to compare


class _Model:
    """Answers each request with the path's next message, then "finish conversation"."""

    def __init__(self, messages: list[str]) -> None:
        self.messages = list(messages)

    def inference(self, *prompts: Any) -> str:
        return self.messages.pop(0) if self.messages else FINISH


class _User:
    """Upstream's user role, played by our ScriptedUser (the same replies our environment gives)."""

    def __init__(self, model_name: str = "", involved_class: Any = None, language: str = "en") -> None:
        self.user: ScriptedUser | None = None
        self.last = ""

    def get_init_prompt(self, question: str) -> str:
        self.user = ScriptedUser(question)
        return self.user.opening()

    def step(self, message: str) -> None:
        self.last = message

    def respond(self) -> dict[str, str]:
        return {"sender": "user", "recipient": "agent", "message": self.user.reply(self.last)}  # type: ignore[union-attr]


def upstream_runner(root: str):
    """run(category, record, answer, messages) -> (state, end_state_ok, process), from upstream's own code."""
    sys.path.insert(0, root)
    sys.modules.setdefault("wcwidth", types.SimpleNamespace(wcswidth=len))  # only its history writer needs it
    step_agent = importlib.import_module("model_inference.multi_step.common_agent_step").CommonAgent_Step
    step_exec = importlib.import_module("model_inference.multi_step.execution_role_step").EXECUTION_STEP
    step_scene = importlib.import_module("model_inference.multi_step.multi_step_scene").Mulit_Step_Scene
    turn_agent = importlib.import_module("model_inference.multi_turn.common_agent").CommonAgent
    turn_exec = importlib.import_module("model_inference.multi_turn.execution_role").EXECUTION
    turn_scene = importlib.import_module("model_inference.multi_turn.multi_turn_scene").Scene
    for scene in (step_scene, turn_scene):
        scene.write_message_history = lambda self, *args: None
    loops: dict[str, Any] = {"tqdm": _NoBar, "CommonAgent_Step": step_agent, "EXECUTION_STEP": step_exec,
                             "Mulit_Step_Scene": step_scene, "CommonAgent": turn_agent, "EXECUTION": turn_exec,
                             "Scene": turn_scene, "APIUSER": _User}  # fmt: skip
    _functions(root, "model_inference/common_inference.py", {"SAVED_CLASS"}, loops)
    _functions(root, "model_inference/common_inference.py", {"multi_step_inference", "multi_turn_inference"}, loops, "CommonInference")
    checker = importlib.import_module("model_eval.checker")
    scoring: dict[str, Any] = dict(vars(checker))
    scoring.update(save_score_as_json=lambda *args, **kwargs: None, OUTPUT_PATH="", language="en",
                   open=lambda *args, **kwargs: io.StringIO())  # fmt: skip
    _functions(root, "eval_main.py", {"agent_eval", "agent_eval_process"}, scoring)
    runs = iter(range(10**9))

    def run(category: str, record: dict, answer: dict, messages: list[str]) -> tuple[Any, bool, float]:
        me = types.SimpleNamespace(model=_Model(messages), model_name=f"diff{next(runs)}", language="en",
                                   max_message_index=40, user_model="scripted")  # fmt: skip
        infer = loops["multi_step_inference" if category == "agent_multi_step" else "multi_turn_inference"]
        test_id = record["id"].split("_")[-1]
        result, process = infer(me, record["question"], record["initial_config"], record["function"],
                                record["involved_classes"], test_id, None)  # fmt: skip
        line = json.loads(json.dumps({"id": record["id"], "result": result, "process": process}, ensure_ascii=False))
        accuracy, process_accuracy = scoring["agent_eval"]([line], [record], [answer], category, "model")
        return line["result"], accuracy == 1.0, process_accuracy

    return run


class _NoBar:
    def __init__(self, *args: Any, **kwargs: Any) -> None: ...

    def __enter__(self) -> _NoBar:
        return self

    def __exit__(self, *args: Any) -> None: ...

    def update(self, n: int = 1) -> None: ...


def ours(env: AceBenchAgentEnvironment, task: Any, messages: list[str]) -> tuple[Any, bool, float]:
    """Play `messages` (then "finish conversation") as the model's text turns through our environment."""
    episode = env.reset(task)
    for text in [*messages, FINISH][: task.max_turns]:
        parsed, _ = episode.turn(text)
        nxt, failed = next_turn(episode, parsed.content)
        if nxt is None:
            break
    verdict = episode.verify("")
    return episode.world.saved_state(), verdict.scores["end_state"] == 1.0, verdict.scores["process"]


def state_hash(state: Any) -> str:
    return hashlib.sha256(json.dumps(state, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]


# --- paths ----------------------------------------------------------------------------------------


def repaired(stone: str) -> str | None:
    """A milestone re-written as valid Python (apostrophes inside words escaped, spaces trimmed), or None."""
    text = _WORD_APOSTROPHE.sub("\\\\'", stone.strip())
    try:
        decoded = decode_agent_message(text)
    except DecodeFailure:
        return None
    return call_text([ToolCall(name, args) for name, args, _ in decoded]) if decoded else None


def _changed(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str):
        return value + "x"
    if isinstance(value, list):
        return value[:-1] if value else ["x"]
    return "x"


def paths(answer: dict) -> list[tuple[str, list[str]]]:
    stones = answer["mile_stone"]
    # (a model turn's surrounding whitespace is dropped by our parser; upstream would fail a list followed by a space)
    written = [s.strip() for s in (stones[0] if stones and isinstance(stones[0], list) else stones)]
    out = [("as_written", written), ("nothing", [])]
    fixed = [repaired(s) for s in written]
    if any(f is None for f in fixed):
        return out
    good: list[str] = fixed  # type: ignore[assignment]
    out.append(("valid_python", good))
    for i in range(len(good)):
        out.append((f"drop_{i}", good[:i] + good[i + 1 :]))
        out.append((f"repeat_{i}", good[: i + 1] + good[i:]))
        if i + 1 < len(good):
            out.append((f"swap_{i}", good[:i] + [good[i + 1], good[i]] + good[i + 2 :]))
        ((name, args, _),) = decode_agent_message(good[i])[:1] or [(None, None, None)]
        if args:
            key = next(iter(args))
            out.append((f"change_{i}", good[:i] + [call_text([ToolCall(name, {**args, key: _changed(args[key])})])] + good[i + 1 :]))
        out.append((f"ask_{i}", good[:i] + [QUESTION] + good[i:]))
    return out


_POOLS: dict[str, list[Any]] = {  # argument values by parameter name: the worlds' own names and ids, and wrong ones
    "user_id": ["user1", "user2", "user3", "user9"], "password": ["password123", "password456", "password789", "nope"],
    "flight_no": ["CA1234", "MU5678", "CZ4321", "MU3561", "MU1566", "CZ1765", "MH2616", "XX0000"],
    "new_flight_no": ["CZ4321", "CZ4352", "MU1566", "CA1234", None], "cabin": ["Economy Class", "Business Class", "First"],
    "new_cabin": ["Economy Class", "Business Class", None], "payment_method": ["cash", "bank", "card"],
    "new_payment_method": ["cash", "bank", None], "baggage_count": [0, 1, 3, 5], "add_baggage": [0, 1, 2, 4],
    "reservation_id": ["res_1", "res_2", "res_3", "res_4", "res_5", "res_9"],
    "reason": ["The airline has canceled the flight.", "change of plans"],
    "origin": ["Beijing", "Shanghai", "Chengdu", None], "destination": ["Beijing", "Nanjing", "Shanghai", None],
    "origin_city": ["Beijing", "Chengdu"], "transfer_city": ["Nanjing", "Xiamen"], "destination_city": ["Shenzhen", "Xiamen"],
    "membership_level": ["regular", "gold", "platinum"], "cabin_class": ["Economy Class", "Business Class"],
    "sender_name": ["Eve", "Frank", "Grace", "Zoe"], "receiver_name": ["Frank", "Helen", "Jack", "Zoe"],
    "user_name": ["Eve", "Grace", "Isaac", "Zoe"], "username": ["Eve", "Frank", "Grace", "Jack", "Zoe"],
    "message": ["On my way.", "Already bought."], "message_id": [1, 3, 4, 7, 8, "2"], "keyword": ["meeting", "pizza", "call"],
    "title": ["Team Meeting", "Today's spending", "To-do list"], "description": ["Buy milk."],
    "time": ["2024-06-11 16:00"], "reminder_id": [1, 2, 4, 1001], "merchant_name": ["Domino's", "Heytea", "Hema Fresh", "KFC"],
    "items": [[{"product": "Margherita Pizza", "quantity": 1}], [{"product": "Cheese Milk Tea", "quantity": 2}],
              [{"product": "Fresh Gift Pack", "quantity": 2}], [{"product": "Fresh Gift Pack", "quantity": 0}],
              [{"product": "Korean Grilled Beef", "quantity": 1}], [{"product": "Nothing"}]],
    "amount": [100, -5000], "user": [{"cash_balance": 1.0, "bank_balance": 1.0, "user_name": "x"}],
    "flight": [{"economy_price": 1, "business_price": 2}], "old_cabin": ["Economy Class"],
}  # fmt: skip


_ACCOUNTS = {"user1": "password123", "user2": "password456", "user3": "password789", "Eve": "password123",
             "Frank": "password456", "Grace": "password789", "Helen": "password321", "Isaac": "password654", "Jack": "password654"}
_OWNERS = {"res_1": "user1", "res_2": "user1", "res_3": "user2", "res_4": "user2", "res_5": "user3"}


def _coupled(args: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """Mostly consistent pairs (a user's own password, a reservation's owner), so calls get past their checks."""
    who = args.get("user_id", args.get("username"))
    if "password" in args and who in _ACCOUNTS and rng.random() < 0.75:
        args["password"] = _ACCOUNTS[who]
    if "reservation_id" in args and "user_id" in args and rng.random() < 0.7:
        args["user_id"] = _OWNERS.get(args["reservation_id"], args["user_id"])
    return args


def random_paths(record: dict, rng: random.Random, count: int = 16) -> list[tuple[str, list[str]]]:
    """`count` paths of 2-6 messages, each 1-2 calls of the task's classes' tools with values from `_POOLS`
    (a parameter is left out now and then, so missing arguments are tried too)."""
    from envsched_lightning.envs.acebench.agent import AgentWorld

    world = AgentWorld(record)
    tools = sorted((name, inspect.signature(targets[0])) for name, targets in world.methods.items())
    out = []
    for k in range(count):
        messages = []
        for _ in range(rng.randint(2, 6)):
            calls = []
            for _ in range(1 if rng.random() < 0.8 else 2):
                name, signature = rng.choice(tools)
                args = {p: copy.deepcopy(rng.choice(_POOLS.get(p, ["x"]))) for p in signature.parameters
                        if rng.random() < 0.92}  # fmt: skip
                calls.append(ToolCall(name, _coupled(args, rng)))
            messages.append(call_text(calls))
        out.append((f"random_{k}", messages))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("snapshot")
    parser.add_argument("--data", default=os.environ.get("ENVSCHED_DATA"))
    parser.add_argument("--record", default=None, help="write upstream's results for every path to this JSON file")
    parser.add_argument("--show", type=int, default=5)
    args = parser.parse_args(argv)
    run = upstream_runner(snapshot_dir(args.snapshot))
    recorded, disagreements, total = [], [], 0
    for category in CATEGORIES:
        env = AceBenchAgentEnvironment(category, data_dir=args.data)
        for task in env.tasks():
            record, answer = task.ground_truth["record"], task.ground_truth["answer"]
            for label, messages in paths(answer) + random_paths(record, random.Random(record["id"])):
                total += 1
                theirs = run(category, copy.deepcopy(record), answer, messages)
                mine = ours(env, task, messages)
                entry = {"category": category, "id": record["id"], "path": label, "messages": messages,
                         "state": state_hash(theirs[0]), "end_state": theirs[1], "process": theirs[2]}  # fmt: skip
                recorded.append(entry)
                if (state_hash(mine[0]), mine[1], round(mine[2], 3)) != (entry["state"], theirs[1], round(theirs[2], 3)):
                    disagreements.append((entry, mine, theirs))
    for entry, mine, theirs in disagreements[: args.show]:
        print(f"DISAGREE {entry['id']} {entry['path']}: ours end_state={mine[1]} process={mine[2]:.3f}; "
              f"upstream end_state={theirs[1]} process={theirs[2]:.3f}\n  ours:     {json.dumps(mine[0])[:600]}\n"
              f"  upstream: {json.dumps(theirs[0])[:600]}")  # fmt: skip
    passed = sum(e["end_state"] for e in recorded)
    print(f"{total} paths over {len({e['id'] for e in recorded})} tasks ({passed} reach the possible answer upstream); "
          f"{len(disagreements)} disagreements")  # fmt: skip
    if args.record:
        Path(args.record).write_text(json.dumps(recorded, indent=0, ensure_ascii=False) + "\n")
        print(f"wrote {args.record}")
    return 1 if disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
