"""BFCL's own overall score, computed as the public leaderboard computes it (bfcl-eval 2026.3.23).

The leaderboard's "Overall Acc" is not a mean over categories: it is a weighted sum of five
sections, each with its own averaging (`eval_runner_helper.generate_leaderboard_csv`):

* non-live (10%): unweighted mean of simple, multiple, parallel, parallel_multiple, where simple
  is itself the unweighted mean of simple_python, simple_java and simple_javascript;
* live (10%): the task-weighted mean of live_simple, live_multiple, live_parallel, live_parallel_multiple;
* irrelevance (10%): unweighted mean of irrelevance and live_irrelevance (live_relevance is shown,
  not counted);
* multi-turn (30%): unweighted mean of base, miss_func, miss_param, long_context;
* agentic (40%): unweighted mean of web search (mean of base and no_snippet) and memory (mean of
  kv, vector, rec_sum).

A category that was not evaluated counts as 0, as upstream counts it, and is listed as missing,
so a partial evaluation gives a lower bound that says what it lacks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

# our environment name -> the leaderboard's category name
CATEGORY_OF_ENV = {
    "bfcl_simple": "simple_python", "bfcl_multiple": "multiple", "bfcl_parallel": "parallel",
    "bfcl_parallel_multiple": "parallel_multiple", "bfcl_live_simple": "live_simple",
    "bfcl_live_multiple": "live_multiple", "bfcl_live_parallel": "live_parallel",
    "bfcl_live_parallel_multiple": "live_parallel_multiple", "bfcl_irrelevance": "irrelevance",
    "bfcl_live_irrelevance": "live_irrelevance", "bfcl_live_relevance": "live_relevance",
    "bfcl_multi_turn_base": "multi_turn_base", "bfcl_java": "simple_java", "bfcl_javascript": "simple_javascript",
    "bfcl_multi_turn_miss_func": "multi_turn_miss_func", "bfcl_multi_turn_miss_param": "multi_turn_miss_param",
    "bfcl_multi_turn_long_context": "multi_turn_long_context",
}  # fmt: skip
# task counts of the v4 live categories: the live section weighs by them (upstream uses the dataset's
# count for a category it did not evaluate)
LIVE_COUNTS = {"live_simple": 258, "live_multiple": 1053, "live_parallel": 16, "live_parallel_multiple": 24}
SECTION_WEIGHTS = {"non_live": 10, "live": 10, "irrelevance": 10, "multi_turn": 30, "agentic": 40}
ALL_CATEGORIES = (
    "simple_python", "simple_java", "simple_javascript", "multiple", "parallel", "parallel_multiple",
    *LIVE_COUNTS, "irrelevance", "live_irrelevance", "live_relevance",
    "multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param", "multi_turn_long_context",
    "web_search_base", "web_search_no_snippet", "memory_kv", "memory_vector", "memory_rec_sum",
)  # fmt: skip


@dataclass(frozen=True)
class BfclOverall:
    """The leaderboard's sections and overall, from the categories evaluated (missing ones count 0)."""

    sections: dict[str, float]
    overall: float
    categories: dict[str, float]  # evaluated: accuracy
    missing: tuple[str, ...]  # leaderboard categories not evaluated (counted as 0)
    limited: bool  # fewer tasks than the full category somewhere: not comparable with the leaderboard

    def markdown(self) -> str:
        rows = ["| section | weight | accuracy |", "|---|---:|---:|"]
        rows += [f"| {name} | {SECTION_WEIGHTS[name]}% | {acc:.3f} |" for name, acc in self.sections.items()]
        rows.append(f"| **overall (leaderboard formula)** | 100% | **{self.overall:.3f}** |")
        notes = [f"missing categories, counted as 0 as the leaderboard counts them: {', '.join(self.missing)}"] if self.missing else []
        if self.limited:
            notes.append("evaluated on part of some categories (limit=): not comparable with the leaderboard")
        return "\n".join(rows + [""] + notes)

    def as_dict(self) -> dict:
        return {"sections": self.sections, "overall": self.overall, "categories": self.categories,
                "missing": list(self.missing), "limited": self.limited}  # fmt: skip


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def bfcl_overall(env_scores: Mapping[str, tuple[float, int]], full_counts: Mapping[str, int] | None = None) -> BfclOverall | None:
    """The leaderboard overall from {env name: (accuracy, tasks)} of our BFCL environments; None without any.

    `full_counts` ({env name: the category's task count}) marks a limited evaluation."""
    acc = {CATEGORY_OF_ENV[e]: a for e, (a, _) in env_scores.items() if e in CATEGORY_OF_ENV}
    if not acc:
        return None
    counts = {CATEGORY_OF_ENV[e]: n for e, (_, n) in env_scores.items() if e in CATEGORY_OF_ENV}

    def a(category: str) -> float:
        return acc.get(category, 0.0)

    simple = _mean([a("simple_python"), a("simple_java"), a("simple_javascript")])
    live_n = {c: counts.get(c, n) for c, n in LIVE_COUNTS.items()}
    sections = {
        "non_live": _mean([simple, a("multiple"), a("parallel"), a("parallel_multiple")]),
        "live": sum(a(c) * n for c, n in live_n.items()) / sum(live_n.values()),
        "irrelevance": _mean([a("irrelevance"), a("live_irrelevance")]),
        "multi_turn": _mean([a(f"multi_turn_{k}") for k in ("base", "miss_func", "miss_param", "long_context")]),
        "agentic": _mean([_mean([a("web_search_base"), a("web_search_no_snippet")]),
                          _mean([a("memory_kv"), a("memory_vector"), a("memory_rec_sum")])]),  # fmt: skip
    }
    overall = sum(sections[k] * w for k, w in SECTION_WEIGHTS.items()) / sum(SECTION_WEIGHTS.values())
    missing = tuple(c for c in ALL_CATEGORIES if c not in acc and c != "live_relevance")
    limited = bool(full_counts) and any(n < full_counts.get(e, n) for e, (_, n) in env_scores.items())
    return BfclOverall(sections, overall, acc, missing, limited)
