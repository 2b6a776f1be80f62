"""Environments: the interface, safe tool-call parsing, the shared tool-world mechanism and a registry.

``make_env("banking", num_tasks=200, seed=0)`` builds a registered environment; built-in worlds live
one per file in `envs/worlds/`, each with a `conf/env/<name>.yaml` for Hydra.
"""

from .base import Environment, Episode, Task, ToolCall, ToolResult, Verdict
from .oracle import oracle_turns, run_scripted
from .parsing import ParsedTurn, parse_tool_calls, render_assistant_turn, render_tool_call, validate_call
from .patterns import PATTERNS, Draft
from .registry import builtin_env_names, env_names, make_env, register_env
from .tasks_io import load_tasks_jsonl, save_tasks_jsonl
from .tool_world import ToolEpisode, ToolError, ToolWorld, tool

__all__ = [
    "PATTERNS",
    "Draft",
    "Environment",
    "Episode",
    "ParsedTurn",
    "Task",
    "ToolCall",
    "ToolEpisode",
    "ToolError",
    "ToolResult",
    "ToolWorld",
    "Verdict",
    "builtin_env_names",
    "env_names",
    "load_tasks_jsonl",
    "make_env",
    "oracle_turns",
    "parse_tool_calls",
    "register_env",
    "render_assistant_turn",
    "render_tool_call",
    "run_scripted",
    "save_tasks_jsonl",
    "tool",
    "validate_call",
]
