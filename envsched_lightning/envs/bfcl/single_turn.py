"""BFCL single-turn categories (v3 or v4 data) as environments, scored as the official checker scores them.

The verdict lives in `checker` (the official Qwen3-8B-FC decoder and `ast_checker`, quirks
included, checked against bfcl-eval by `scripts/bfcl_check.sh`), because a reward that disagrees
with the leaderboard would train towards the wrong target. The Java and JavaScript categories use
the same checker with their language (`languages`): arguments are source strings, typed as
upstream's converters type them, and the model is shown upstream's language-hinted docs.

`check_bfcl(question, possible_answer, completion)` is the public entry point that external checks
call; episodes judge the raw text of their first model turn the same way.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

from envsched_lightning.envs.task_text import task_text, user_contents
from envsched_lightning.envs.base import Environment, Episode, Task, ToolCall, ToolResult, Verdict
from envsched_lightning.envs.bfcl.checker import (  # noqa: F401 - PYTHON_TYPES, RULES, check_call, standardize_string re-exported
    PYTHON_TYPES,
    RULES,
    check_call,
    check_rules,
    standardize_string,
    verdict,
)
from envsched_lightning.envs.bfcl.languages import hinted_docs, language_of, to_source
from envsched_lightning.envs.parsing import ParsedTurn, render_assistant_turn
from envsched_lightning.envs.benchmark_files import (
    field_types,
    pattern_features,
    read_jsonl,
    resolve_data_dir,
    to_tool_schema,
)
from envsched_lightning.envs.time_limit import DEFAULT_TOOL_TIME_LIMIT
from envsched_lightning.envs.registry import register_env
from envsched_lightning.scheduling import TaskSpec

# The question files we load (v3 names); all but the three (ir)relevance ones have a possible_answer file.
CATEGORIES: tuple[str, ...] = (
    "simple", "multiple", "parallel", "parallel_multiple",
    "live_simple", "live_multiple", "live_parallel", "live_parallel_multiple",
    "irrelevance", "live_irrelevance", "live_relevance", "java", "javascript",
)  # fmt: skip
NO_ANSWER_CATEGORIES = frozenset({"irrelevance", "live_irrelevance", "live_relevance"})



# ---------------------------------------------------------------- data files
BFCL_VERSIONS = ("v3", "v4")
# v4 renamed the three `simple` categories after their language; the others kept their names
V4_FILE_NAMES = {"simple": "simple_python", "java": "simple_java", "javascript": "simple_javascript"}


def resolve_bfcl_dir(env_name: str, data_dir: str | os.PathLike[str] | None, version: str) -> tuple[Path, str]:
    """(folder of BFCL_<version>_*.json files, version). `auto`: v4 where its folder (or files) exist, else v3."""
    if version not in (*BFCL_VERSIONS, "auto"):
        raise ValueError(f"environment {env_name!r}: version must be one of v3, v4, auto; got {version!r}")
    if version != "auto":
        path = resolve_data_dir(env_name, data_dir, f"bfcl_{version}")
        if not any(path.glob(f"BFCL_{version}_*.json")):
            from envsched_lightning.data import source_for

            raise FileNotFoundError(f"environment {env_name!r}: no BFCL_{version}_*.json files in {path} (version "
                                    f"{version}): run `python -m envsched_lightning.data fetch {source_for(f'bfcl_{version}')}` "
                                    f"to put them in bfcl_{version}/ under the data root, or point "
                                    f"env.{env_name}.data_dir at a folder holding them")  # fmt: skip
        return path, version
    errors = []
    for candidate in ("v4", "v3"):
        try:
            path = resolve_data_dir(env_name, data_dir, f"bfcl_{candidate}")
        except (ValueError, FileNotFoundError) as err:
            errors.append(str(err))
            continue
        if any(path.glob(f"BFCL_{candidate}_*.json")):
            return path, candidate
    raise (ValueError if data_dir in (None, "", "None", "null") else FileNotFoundError)(
        errors[0] if errors else f"environment {env_name!r}: no BFCL v3 or v4 files under {data_dir}")


# ---------------------------------------------------------------- the verdict
def check_calls(
    record_id: str,
    docs: Sequence[Mapping[str, Any]],
    calls: Sequence[ToolCall],
    ground_truth: Sequence[Mapping[str, Mapping[str, Sequence[Any]]]] | None,
    rules: str = "official",
    language: str | None = None,
) -> tuple[float, str]:
    """Score already-parsed calls: they are rendered as Qwen3 writes them and scored as text."""
    return verdict(record_id, docs, render_assistant_turn("", list(calls)), ground_truth, rules, language)


def check_bfcl(question: dict, possible_answer: dict | None, completion: str, rules: str = "official",
               language: str | None = None) -> tuple[float, str]:  # fmt: skip
    """Score raw Qwen3 model text against one BFCL record; `possible_answer` is None for (ir)relevance.
    `language` (python, java, javascript) defaults to the one the record id names."""
    truth = None if possible_answer is None else possible_answer["ground_truth"]
    return verdict(question["id"], question["function"], completion, truth, rules, language)


def _first_choice(allowed: Sequence[Any]) -> Any:
    return next(a for a in allowed if a != "")


def _fill_template(template: Mapping[str, Sequence[Any]]) -> dict[str, Any]:
    """An allowed dict is itself {key: [allowed values]}: keep first choices, drop `""`-first keys."""
    return {k: v[0] for k, v in template.items() if v and v[0] != ""}


def ground_truth_calls(question: Mapping[str, Any], possible_answer: Mapping[str, Any],
                       language: str | None = None) -> list[ToolCall]:  # fmt: skip
    """Each expected call as a model would make it.

    Per parameter the first allowed value is used; a parameter whose first choice is `""` is omitted
    unless the doc requires it (then its first real value is used). Dict and list-of-dict parameters
    hold templates of allowed lists, which are filled the same way one level down. In the Java and
    JavaScript categories (`language`, by default the one the id names) each value is then written
    as the source string that reads back as it.
    """
    language = language or language_of(str(question["id"]))
    docs = {d["name"]: d for d in question["function"]}
    calls = []
    for expected in possible_answer["ground_truth"]:
        (name, params), = expected.items()
        doc = docs.get(name, question["function"][0] if len(docs) == 1 else {})
        props = doc.get("parameters", {}).get("properties", {})
        required = set(doc.get("parameters", {}).get("required", []))
        args: dict[str, Any] = {}
        for param, allowed in params.items():
            if param not in props and "" in allowed:  # not offered by the doc: only omission can pass
                continue
            if not allowed or all(a == "" for a in allowed) or (allowed[0] == "" and param not in required):
                continue
            value = _first_choice(allowed)
            kind = props.get(param, {}).get("type")
            if kind in ("dict", "HashMap") and isinstance(value, dict):
                value = _fill_template(value)
            elif kind in ("array", "tuple") and isinstance(value, list) and all(isinstance(v, dict) for v in value):
                if props[param].get("items", {}).get("type") == "dict":
                    value = [_fill_template(v) for v in value]
            args[param] = value if language == "python" else to_source(language, props.get(param, {}), value)
        calls.append(ToolCall(doc.get("name", name), args))  # the offered name, as a model sees it
    return calls


# ---------------------------------------------------------------- environments
class BfclEpisode(Episode):
    """Single-turn BFCL: the first model turn is recorded (its calls are not executed) and judged.

    The verdict decodes the turn's raw text with the official decoder (`checker.verdict`), so
    block layout matters exactly as upstream; calls handed to `step` directly (no text) are judged
    as Qwen3 would have written them.
    """

    def __init__(self, record: Mapping[str, Any], truth: Sequence[Any] | None, rules: str = "official",
                 language: str | None = None) -> None:  # fmt: skip
        self._record, self._truth, self._rules, self._language = record, truth, check_rules(rules), language
        self._text: str | None = None
        self._calls: list[ToolCall] | None = None

    def turn(self, text: str, parse: Callable[[str], ParsedTurn] | None = None,
             time_limit: float | None = DEFAULT_TOOL_TIME_LIMIT) -> tuple[ParsedTurn, list[ToolResult]]:  # fmt: skip
        first = self._text is None and self._calls is None
        parsed, results = super().turn(text, parse, time_limit)
        if first:  # another family's syntax (`parse`) is judged as the same calls in the checker's format
            raw = text if isinstance(text, str) else ""
            self._text = raw if parse is None or parsed.errors else render_assistant_turn(parsed.content, parsed.calls)
        return parsed, results

    def step(self, calls: Sequence[ToolCall]) -> list[ToolResult]:
        if self._calls is None:
            self._calls = list(calls)
        return [ToolResult(c.name, "recorded: BFCL single-turn calls are judged, not executed") for c in calls]

    def verify(self, final_answer: str) -> Verdict:
        if self._text is not None:
            text = self._text
        elif self._calls is not None:
            text = render_assistant_turn("", self._calls)
        else:  # nothing was played: the answer is the whole model message
            text = final_answer if isinstance(final_answer, str) else ""
        reward, reason = verdict(self._record["id"], self._record["function"], text, self._truth, self._rules, self._language)
        return Verdict(reward, reason if self._rules == "official" else f"[rules=training] {reason}")


class BfclEnvironment(Environment):
    """One BFCL single-turn category (v3 or v4 data: `version`); tasks carry their own function docs as `tools`.

    `version="auto"` takes v4 (the current leaderboard, what `python -m envsched_lightning.data fetch
    bfcl` writes) where a `bfcl_v4` folder exists, else v3. v4 renamed `simple`, `java` and
    `javascript` to `simple_python`, `simple_java`, `simple_javascript`; the environments keep the
    v3 names (`bfcl_simple`, `bfcl_java`, `bfcl_javascript`) and report `version`.

    `language` (python, java, javascript) follows the category: it types the checker's values and,
    for Java/JavaScript, the tools are upstream's hinted docs (`languages.hinted_docs`).

    `rules="official"` (default) reproduces the leaderboard's verdict, quirks included; `"training"`
    fails malformed `<tool_call>` blocks and matches parallel calls in any order (see
    `checker`). Reported scores always use "official".
    """

    def __init__(self, category: str = "simple", data_dir: str | os.PathLike[str] | None = None, rules: str = "official",
                 version: str = "auto") -> None:  # fmt: skip
        if category not in CATEGORIES:
            raise ValueError(f"unknown BFCL category {category!r}; valid: {', '.join(CATEGORIES)}")
        self.category = category
        self.name = f"bfcl_{category}"
        self.language = language_of(category)
        self.rules = check_rules(rules, f"environment {self.name!r}")
        self.data_dir, self.version = resolve_bfcl_dir(self.name, data_dir, version)

    @property
    def file_stem(self) -> str:
        """`BFCL_v3_simple`, `BFCL_v4_simple_python`, ...: the question and answer files' name."""
        name = V4_FILE_NAMES.get(self.category, self.category) if self.version == "v4" else self.category
        return f"BFCL_{self.version}_{name}"

    @cached_property
    def records(self) -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
        """(question, possible_answer or None) pairs, matched by id; a missing answer is an error."""
        questions = read_jsonl(self.data_dir / f"{self.file_stem}.json",
                               check=field_types(question=list, function=list))  # fmt: skip
        if self.category in NO_ANSWER_CATEGORIES:
            return [(q, None) for q in questions]
        answer_path = self.data_dir / "possible_answer" / f"{self.file_stem}.json"
        answers = {a["id"]: a for a in read_jsonl(answer_path, check=field_types(ground_truth=(list, dict)))}
        missing = [q["id"] for q in questions if q["id"] not in answers]
        if missing:
            raise ValueError(f"{answer_path}: no answer for {len(missing)} question(s), e.g. {missing[:3]}")
        return [(q, answers[q["id"]]) for q in questions]

    def _task(self, question: dict[str, Any], answer: dict[str, Any] | None) -> Task:
        docs = question["function"]
        truth = answer["ground_truth"] if answer else []
        n_params = sum(len(next(iter(call.values()))) for call in truth)
        features = {
            "n_functions_offered": len(docs),
            "n_expected_calls": len(truth) if answer else float("relevance" in self.category and "ir" not in self.category),
            "n_params": n_params,
            "n_required_offered": sum(len(d.get("parameters", {}).get("required", [])) for d in docs),
            "is_parallel": "parallel" in self.category,
            "is_multiple": "multiple" in self.category,
            "is_no_call": "irrelevance" in self.category,
            "is_live": self.category.startswith("live_"),
        }
        pattern = "refuse" if "irrelevance" in self.category else "parallel" if "parallel" in self.category else "single"
        features |= pattern_features(pattern, features["n_expected_calls"])
        spec = TaskSpec(
            env=self.name, task_id=question["id"], tools=tuple(d["name"] for d in docs), state_keys=(),
            verifier="bfcl_ast", features=features, reward_type="binary",
            text=task_text(user_contents(question["question"]), docs),
        )  # fmt: skip
        return Task(
            spec=spec,
            messages=tuple(question["question"][0]),
            ground_truth={"question": question, "possible_answer": answer},
            max_turns=1,
            tools=tuple(to_tool_schema(d) for d in hinted_docs(docs, self.language)),
        )

    @cached_property
    def _tasks(self) -> list[Task]:
        return [self._task(q, a) for q, a in self.records]

    def tasks(self) -> list[Task]:
        return list(self._tasks)

    def tool_schemas(self) -> list[dict[str, Any]]:
        seen: dict[str, dict[str, Any]] = {}
        for task in self._tasks:
            for schema in task.tools:
                seen.setdefault(schema["function"]["name"], dict(schema))
        return list(seen.values())

    def reset(self, task: Task) -> Episode:
        answer = task.ground_truth["possible_answer"]
        return BfclEpisode(task.ground_truth["question"], answer["ground_truth"] if answer else None, self.rules, self.language)


def _register(category: str) -> None:
    register_env(f"bfcl_{category}")(lambda **options: BfclEnvironment(category, **options))


for _category in CATEGORIES:
    _register(_category)
