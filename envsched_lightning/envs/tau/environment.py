"""tau-bench retail and airline as single-instruction environments over the shipped JSON databases.

Reward as tau-bench's `Env.calculate_reward`: 1 only if (a) the official hash of the episode's
database equals the hash after replaying the task's ground-truth `actions` on a fresh copy, and (b)
every required `outputs` string appears (lowercased; the answer lowercased with commas removed) in
what the agent said to the user. The tools reproduce the official tools' state changes and output
strings, quirks included (`tau/backends/*.py`); `rules="training"` (opt-in, never for reported
scores) fixes the few official rules that would teach a falsehood.

Tasks: `tasks="ours"` (default) are our generated tasks (`tau/tasks/*.jsonl`, made by
`tau/tasks/generate.py`), whose `instruction` is the user's one message holding everything the agent
needs; the episode ends when the agent answers without a tool call. `tasks="test"|"train"|"dev"` are
tau-bench's own task lists (`tau/official_tasks.py`, environments `tau_<domain>_<split>`), played with a
simulated user (`user="scripted"`, `envs/users.py`): its first message is the instruction in the first
person, a question gets the instruction again, any other answer gets "###STOP###", which ends the
episode as upstream's user ends it. Every message the agent wrote to the user counts for the required
outputs, as upstream's respond actions do. Upstream's user is an LLM; scores made with the scripted
user say so. As upstream, `transfer_to_human_agents` ends the episode: later calls are not run and
nothing the agent says after it reaches the user.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Any

from envsched_lightning.envs.tau.backends.airline import AirlineTools
from envsched_lightning.envs.tau.backends.common import SharedDatabase, TauDomain, check_rules
from envsched_lightning.envs.tau.backends.retail import RetailTools
from envsched_lightning.envs.task_text import task_text
from envsched_lightning.envs.base import Environment, Episode, Task, ToolCall, ToolResult, Verdict
from envsched_lightning.envs.benchmark_files import pattern_features, read_jsonl, read_utf8, resolve_data_dir
from envsched_lightning.envs.registry import register_env
from envsched_lightning.envs.tau.official_tasks import SPLITS, read_task_module, task_file
from envsched_lightning.envs.users import TAU_STOP, TAU_USER, UserSettings, UserSimulator
from envsched_lightning.scheduling import TaskSpec

DOMAINS: dict[str, type[TauDomain]] = {"retail": RetailTools, "airline": AirlineTools}
TERMINATE = "transfer_to_human_agents"
READ_ONLY = frozenset({
    "find_user_id_by_email", "find_user_id_by_name_zip", "get_user_details", "get_order_details", "get_product_details",
    "list_all_product_types", "get_reservation_details", "list_all_airports", "search_direct_flight",
    "search_onestop_flight", "calculate", "think", "transfer_to_human_agents",
})  # fmt: skip
STOP = TAU_STOP  # upstream's user ends the conversation with it
TASK_SETS = ("ours", *sorted({s for splits in SPLITS.values() for s in splits}))
USERS = ("none", "scripted", "model", "api")
SYSTEM = ("You are a customer service agent for a {domain} company. Use the tools to look up and change records "
          "as the user asks, then reply to the user with the result.")  # fmt: skip


def _task_problem(task: dict[str, Any]) -> str | None:
    actions = task.get("actions")
    ok = isinstance(task.get("instruction"), str) and isinstance(actions, list) and isinstance(task.get("task_id"), str)
    ok = ok and all(isinstance(a, dict) and isinstance(a.get("name"), str) and isinstance(a.get("kwargs"), dict) for a in actions)
    if not ok or not isinstance(task.get("outputs", []), list):
        return "a task needs task_id, instruction, actions [{name, kwargs}] and outputs"
    return None


def load_task_file(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """tau-bench-shaped tasks, one JSON object a line; a malformed line names the file and line."""
    return read_jsonl(path, key="task_id", check=_task_problem)


def outputs_found(outputs: Sequence[str], answer: str) -> list[str]:
    """The required outputs missing from the answer (tau-bench: lowercase, commas removed)."""
    text = answer.lower().replace(",", "")
    return [o for o in outputs if o.lower() not in text]


def failed(observation: str | None) -> bool:
    """Whether an observation reports a refused call (tool error or unknown tool) or an aborted run."""
    return observation is None or observation.startswith(("Error:", "Unknown action "))


class TauEpisode(Episode):
    def __init__(self, tools: TauDomain, task: Mapping[str, Any], expected_hash: str, user: UserSimulator | None = None) -> None:
        self.tools, self._task, self._expected_hash, self.user = tools, task, expected_hash, user
        self.calls: list[ToolCall] = []
        self.said: list[str] = []  # every answer the agent wrote to the user (upstream's respond actions)
        self.transferred = False  # upstream ends the episode at transfer_to_human_agents
        self.aborted = False  # upstream's run raised (a tool returned None): scored 0

    def step(self, calls: Sequence[ToolCall]) -> list[ToolResult]:
        results = []
        for call in calls:
            if self.transferred or self.aborted:
                why = "the conversation is over (transferred to a human agent or aborted); no further actions are run"
                results.append(ToolResult(call.name, f"Error: {why}", why))
                continue
            self.calls.append(call)
            out = self.tools.execute(call.name, call.arguments)
            if out is None:
                self.aborted = True
                why = f"{call.name} returned nothing; the official environment raises here and scores the episode 0"
                results.append(ToolResult(call.name, f"Error: {why}", why))
                continue
            results.append(ToolResult(call.name, out, out if failed(out) else None))
            self.transferred = call.name == TERMINATE
        return results

    def end_turn(self, answer: str = "") -> tuple[Mapping[str, str], ...] | None:
        """An answer reaches the user (unless the conversation was transferred); the user's reply, or None at its stop."""
        if self.transferred or self.aborted:
            return None
        self.said.append(answer)
        if self.user is None:
            return None
        reply = self.user.reply(answer)
        return None if STOP in reply else ({"role": "user", "content": reply},)

    def verify(self, final_answer: str) -> Verdict:
        cost = {} if self.user is None else {  # the simulated user's cost, reported beside the agent's, whatever the verdict
            "user_turns": float(self.user.cost.turns), "user_tokens": float(self.user.cost.new_tokens)}
        if self.aborted:
            return Verdict(0.0, "aborted: the official environment raises on this episode", cost)
        if self.tools.hash() != self._expected_hash:
            return Verdict(0.0, "database differs from the ground-truth replay", cost)
        # what reached the user: the answers end_turn saw, or (an episode checked without it) the final answer
        said = "\n".join(self.said) if self.said or self.transferred else final_answer
        missing = outputs_found(self._task.get("outputs", []), said)
        return Verdict(0.0, f"answer lacks required outputs {missing}", cost) if missing else Verdict(1.0, "ok", cost)


class TauEnvironment(Environment):
    """One tau-bench domain; `tasks`: "ours" (`tasks_path` overrides the shipped file) or an official split.

    `rules`: "official" (default; what reported scores use) reproduces the official tools exactly;
    "training" changes the airline rules listed in `tau/backends/airline.py` (docs/benchmarks.md).
    """

    def __init__(
        self, domain: str = "retail", data_dir: str | os.PathLike[str] | None = None, tasks_path: str | None = None,
        rules: str = "official", tasks: str = "ours", user: str | None = None, user_model_path: str | None = None,
        user_max_new_tokens: int = 128, user_temperature: float = 0.0, user_seed: int = 0,
        user_api: Mapping[str, Any] | None = None,
    ) -> None:  # fmt: skip
        if domain not in DOMAINS:
            raise ValueError(f"unknown tau-bench domain {domain!r}; valid: {', '.join(DOMAINS)}")
        if tasks not in TASK_SETS:
            raise ValueError(f"tasks must be one of {', '.join(TASK_SETS)}; got {tasks!r}")
        user = user or ("none" if tasks == "ours" else "scripted")
        if user not in USERS:
            raise ValueError(f"user must be one of {', '.join(USERS)}; got {user!r}")
        self.user_settings = None if user == "none" else UserSettings(
            user, user_model_path, user_max_new_tokens, user_temperature, user_seed, user_api,
        )  # how each episode's simulated user is made
        self.rules = check_rules(rules)
        self.domain, self.task_set, self.user = domain, tasks, user
        self.name = f"tau_{domain}" if tasks == "ours" else f"tau_{domain}_{tasks}"
        self.data_dir = resolve_data_dir(self.name, data_dir, "tau_bench") / domain / "data"
        self.task_path = None if tasks == "ours" else task_file(resolve_data_dir(self.name, data_dir, "tau_bench_tasks"), domain, tasks)
        self.tasks_path = tasks_path

    @cached_property
    def database(self) -> SharedDatabase:
        """Loaded once; episodes see it through copy-on-read overlays."""
        tables = {}
        for name in DOMAINS[self.domain].files:
            path = self.data_dir / f"{name}.json"
            try:
                tables[name] = json.loads(read_utf8(path))
            except (OSError, ValueError) as exc:  # (a JSON error is a ValueError; undecodable bytes say path:line)
                raise ValueError(f"{path}: cannot read tau-bench table ({exc})") from None
        return SharedDatabase(tables)

    def fresh_tools(self) -> TauDomain:
        return DOMAINS[self.domain](self.database, self.rules)

    @cached_property
    def raw_tasks(self) -> list[dict[str, Any]]:
        if self.task_path is not None:
            return read_task_module(self.task_path, self.task_set)
        if self.tasks_path:
            return load_task_file(self.tasks_path)
        with resources.as_file(resources.files("envsched_lightning.envs.tau") / "tasks" / f"{self.domain}.jsonl") as path:
            return load_task_file(path)

    def expected_hash(self, raw: Mapping[str, Any]) -> str:
        """Hash after replaying the ground-truth actions on a fresh copy (cached per task id)."""
        cache = self.__dict__.setdefault("_hashes", {})
        if raw["task_id"] not in cache:
            tools = self.fresh_tools()
            for i, action in enumerate(raw["actions"]):
                if action["name"] == TERMINATE:  # upstream skips terminating actions in the replay
                    continue
                out = tools.execute(action["name"], action["kwargs"])
                # our tasks' ground truth must run; upstream's own lists hold a few actions that fail, and
                # upstream's reward replays them anyway (the failed call changes nothing): so do we
                if failed(out) and self.task_set == "ours":
                    raise ValueError(f"{self.name} task {raw['task_id']!r}: ground-truth action {i} "
                                     f"({action['name']}) fails: {str(out).removeprefix('Error: ')[:160]}")  # fmt: skip
            cache[raw["task_id"]] = tools.hash()
        return cache[raw["task_id"]]

    def _task(self, raw: dict[str, Any]) -> Task:
        names = [a["name"] for a in raw["actions"]]
        writes = [n for n in names if n not in READ_ONLY]
        features = {
            "n_expected_calls": len(names),
            "n_write_calls": len(writes),
            "n_read_calls": len(names) - len(writes),
            "n_outputs": len(raw.get("outputs", [])),
            "n_functions_offered": len(DOMAINS[self.domain].tool_schemas()),
            "is_lookup_then_write": bool(writes) and names[0] in READ_ONLY,
            "is_read_only": not writes,
        } | pattern_features("lookup_write" if writes and names[0] in READ_ONLY else "single" if len(names) == 1 else "multi_hop", len(names))
        spec = TaskSpec(
            env=self.name, task_id=raw["task_id"], tools=tuple(dict.fromkeys(names)), state_keys=DOMAINS[self.domain].files,
            verifier="tau_db_hash_outputs", features=features, reward_type="binary",
            text=task_text([raw["instruction"]]),
        )  # fmt: skip
        first = ({"role": "user", "content": raw["instruction"]} if self.user_settings is None
                 else self.user_settings.opening_message(raw["instruction"], STOP, TAU_USER))  # fmt: skip
        messages = ({"role": "system", "content": SYSTEM.format(domain=self.domain)}, first)
        return Task(spec=spec, messages=messages, ground_truth=raw, max_turns=30)

    @cached_property
    def _tasks(self) -> list[Task]:
        for raw in self.raw_tasks:  # a task whose ground truth does not run is refused at load, by id
            self.expected_hash(raw)
        return [self._task(raw) for raw in self.raw_tasks]

    def tasks(self) -> list[Task]:
        return list(self._tasks)

    def tool_schemas(self) -> list[dict[str, Any]]:
        return DOMAINS[self.domain].tool_schemas()

    @property
    def simulated_user(self) -> UserSettings | None:
        """Who plays the user in this environment's episodes (None: our single-message tasks)."""
        return self.user_settings

    def _user(self, raw: Mapping[str, Any]) -> UserSimulator:
        assert self.user_settings is not None
        return self.user_settings.make(raw["instruction"], STOP, TAU_USER)

    def reset(self, task: Task) -> Episode:
        user = None if self.user == "none" else self._user(task.ground_truth)
        if user is not None:
            user.begin(task.messages[-1])  # the opening is in the task's prompt; the user goes on from it
        return TauEpisode(self.fresh_tools(), task.ground_truth, self.expected_hash(task.ground_truth), user)


for _domain in DOMAINS:
    register_env(f"tau_{_domain}")(lambda _d=_domain, **options: TauEnvironment(_d, **options))
    for _split in SPLITS[_domain]:
        register_env(f"tau_{_domain}_{_split}")(lambda _d=_domain, _s=_split, **options: TauEnvironment(_d, tasks=_s, **options))


def default_task_dir() -> Path:
    """Where the shipped task files live (for the generator script)."""
    return Path(__file__).resolve().parent / "tasks"
