"""Score raw model outputs offline, per task id, with an environment's own verifier (rules: official).

    python -m envsched_lightning.envs.score --env bfcl_simple --outputs outputs.jsonl [--data DIR] [--out FILE]

For outputs generated elsewhere. One JSON object per line: ``{"id": "<task id>", "output": "<raw
model text>"}``, or for multi-turn and stateful environments ``{"id": ..., "turns": ["<turn 1>",
...]}``: every assistant message in order, tool-calling turns and answers alike (BFCL multi-turn:
the answer that closes a user turn opens the next). Other fields are ignored, so the per-env files
`evaluate.py` writes (`outputs/<env>.jsonl`) score as they are. Each text is played through
`Episode.turn` as the agent loop plays a model turn (tool calls run, their results are not shown to
anyone), the episode ends where the loop would end it (an answer after the last user turn, or
`task.max_turns`), and `Episode.verify` gets the last turn's text outside tool-call blocks, as in
training. Benchmark data comes from `--data` (default: $ENVSCHED_DATA), as for `envs.inspect`.

Prints the score over the scored tasks (and with missing tasks counted as 0), lists missing and
unknown ids and every bad line (file and line), and writes one verdict per scored id (reward,
reason) to `--out` (default: next to the outputs file, `<name>.verdicts.jsonl`). Exit status 0 once
the file is scored (bad lines are reported, not fatal; `--strict` makes them exit 1), 2 when the
environment or the file cannot be read.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from .base import Environment, Task, Verdict, checked_verdict, play_turn
from .registry import builtin_env_names, make_env


class Entry(NamedTuple):
    line: int
    task_id: str
    texts: list[str]


class Scored(NamedTuple):
    entries: list[Entry]  # good lines, first occurrence of each known id
    problems: list[str]  # "FILE:LINE: why" for every line that was not scored
    unknown: list[str]  # ids the environment does not have
    missing: list[str]  # task ids no line answered


def _texts(record: dict[str, Any]) -> list[str] | str:
    """The model turns of one record, or why there are none."""
    if "turns" in record and "output" in record:
        return "has both 'output' and 'turns'; give one"
    if "turns" in record:
        turns = record["turns"]
        if not isinstance(turns, list) or not all(isinstance(t, str) for t in turns):
            return "'turns' must be a list of strings (one per assistant message)"
        return list(turns)
    if "output" in record:
        if not isinstance(record["output"], str):
            return f"'output' must be a string, got {type(record['output']).__name__}"
        return [record["output"]]
    return "needs 'output' (the raw model text) or 'turns' (a list of texts)"


def read_outputs(path: str | os.PathLike[str], task_ids: Sequence[str]) -> Scored:
    """Parse the outputs file line by line; a bad line becomes a problem naming file and line, never an exception."""
    known = set(task_ids)
    entries: list[Entry] = []
    problems: list[str] = []
    unknown: list[str] = []
    first: dict[str, int] = {}
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            where = f"{path}:{lineno}"
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                problems.append(f"{where}: not UTF-8 text ({exc.reason} at byte {exc.start})")
                continue
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except (json.JSONDecodeError, RecursionError) as exc:
                problems.append(f"{where}: not JSON ({getattr(exc, 'msg', type(exc).__name__)})")
                continue
            if not isinstance(record, dict) or "id" not in record:
                problems.append(f"{where}: expected an object with an 'id' field")
                continue
            if isinstance(record["id"], bool) or not isinstance(record["id"], (str, int)):
                problems.append(f"{where}: 'id' must be a string, got {json.dumps(record['id'])[:80]}")
                continue
            task_id = str(record["id"])
            if task_id not in known:
                problems.append(f"{where}: unknown id {task_id!r} (not a task of this environment)")
                unknown.append(task_id)
                continue
            if task_id in first:
                problems.append(f"{where}: duplicate id {task_id!r} (first on line {first[task_id]}); ignored")
                continue
            texts = _texts(record)
            if isinstance(texts, str):
                problems.append(f"{where}: id {task_id!r}: {texts}")
                continue
            first[task_id] = lineno
            entries.append(Entry(lineno, task_id, texts))
    return Scored(entries, problems, unknown, [t for t in task_ids if t not in first])


def replay(env: Environment, task: Task, texts: Sequence[str]) -> tuple[Verdict, int]:
    """Play `texts` as the model's turns, ending where the agent loop ends an episode (`base.play_turn`, the rule
    both follow); (verdict, turns played). The final answer is the last played turn's text outside tool calls."""
    episode = env.reset(task)
    answer, played = "", 0
    for text in texts:
        played += 1
        out = play_turn(episode, task, text, played)
        answer = out.answer
        if out.done:
            break
    return checked_verdict(episode, answer), played


def score_file(env: Environment, path: str | os.PathLike[str]) -> tuple[Scored, list[dict[str, Any]]]:
    """Read and score every good line; one verdict record per scored id, in file order."""
    tasks = {t.spec.task_id: t for t in env.tasks()}
    scored = read_outputs(path, list(tasks))
    verdicts = []
    for entry in scored.entries:
        verdict, played = replay(env, tasks[entry.task_id], entry.texts)
        verdicts.append({"id": entry.task_id, "env": env.name, "line": entry.line, "reward": verdict.reward,
                         "reason": verdict.reason, "turns_given": len(entry.texts), "turns_played": played})  # fmt: skip
    return scored, verdicts


def _listing(ids: Sequence[str], limit: int = 10) -> str:
    shown = ", ".join(ids[:limit])
    return shown + (f", ... ({len(ids) - limit} more)" if len(ids) > limit else "")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m envsched_lightning.envs.score", description=__doc__.splitlines()[0])
    parser.add_argument("--env", required=True, help="environment name, e.g. bfcl_simple, tau_retail, banking")
    parser.add_argument("--outputs", required=True, help='JSON Lines: {"id": ..., "output": text} or {"id": ..., "turns": [texts]}')
    parser.add_argument("--data", default=os.environ.get("ENVSCHED_DATA"),
                        help="benchmark data folder for BFCL / ACEBench / tau-bench (default: $ENVSCHED_DATA)")
    parser.add_argument("--num-tasks", type=int, default=None, help="num_tasks of a built-in world (default: its own)")
    parser.add_argument("--out", default=None, help="verdicts file (default: <outputs>.verdicts.jsonl)")
    parser.add_argument("--strict", action="store_true", help="exit 1 when any line was bad, unknown or a duplicate")
    args = parser.parse_args(argv)
    if args.env in builtin_env_names():
        options = {"num_tasks": args.num_tasks} if args.num_tasks else {}
    else:
        options = {"data_dir": args.data}
    try:
        env = make_env(args.env, **options)
        scored, verdicts = score_file(env, args.outputs)
    except (ValueError, TypeError, OSError) as err:
        print(f"{args.env}: cannot score {args.outputs} ({err})", file=sys.stderr)
        return 2
    for problem in scored.problems[:50]:
        print(problem, file=sys.stderr)
    if len(scored.problems) > 50:
        print(f"... and {len(scored.problems) - 50} more bad lines", file=sys.stderr)
    total = len(verdicts) + len(scored.missing)
    rewards = [v["reward"] for v in verdicts]
    if rewards:
        print(f"{env.name} (rules={getattr(env, 'rules', 'official')}): {sum(rewards) / len(rewards):.3f} over "
              f"{len(rewards)} scored tasks; {sum(rewards) / total:.3f} over all {total} tasks (missing ones count 0)")  # fmt: skip
    else:
        print(f"{env.name}: no line could be scored ({total} tasks in the environment)")
    print(f"missing ids ({len(scored.missing)}): {_listing(scored.missing) or '-'}")
    print(f"unknown ids ({len(scored.unknown)}): {_listing(scored.unknown) or '-'}")
    print(f"bad lines: {len(scored.problems)}{' (listed above)' if scored.problems else ''}")
    out = Path(args.out) if args.out else Path(args.outputs).with_suffix(".verdicts.jsonl")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(v) + "\n" for v in verdicts))
    print(f"verdicts: {out}")
    return 1 if args.strict and scored.problems else 0


if __name__ == "__main__":
    sys.exit(main())
