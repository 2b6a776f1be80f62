"""verl's sampler state is range-checked at load: a forged `queue` or `drawn` is refused, never drawn from.

The sampler is built here from plain rows (what `dataset_rows` reads when there is no dataframe), so this
runs without verl; tests/verl/ checks the same sampler inside verl's own dataloader."""

from __future__ import annotations

import pytest

from envsched_lightning.adapters.verl import EnvSchedSampler


def _sampler() -> EnvSchedSampler:
    rows = [{"data_source": "banking", "extra_info": {"env": "banking", "task_id": str(i)}} for i in range(12)]
    return EnvSchedSampler(rows, {"train_batch_size": 4, "sampler": {"scheduler": "random", "scheduler_kwargs": {"seed": 0}}})


def test_a_saved_state_resumes_the_same_draws():
    sampler = _sampler()
    draws = iter(sampler)
    next(draws), next(draws)  # half a batch drawn: the rest waits in the queue
    fresh = _sampler()
    fresh.load_state_dict(sampler.state_dict())
    resumed = iter(fresh)
    assert [next(resumed), next(resumed)] == [next(draws), next(draws)]


@pytest.mark.parametrize("field, value, match", [
    ("queue", [-1, -1], "queue"), ("queue", [0, 0], "queue"), ("queue", [99], "queue"), ("queue", list(range(5)), "queue"),
    ("queue", "0", "queue"), ("drawn", -1, "drawn"), ("drawn", 10**9, "drawn"), ("drawn", True, "drawn"),
])  # fmt: skip
def test_forged_fields_are_refused_before_anything_is_set(field, value, match):
    sampler = _sampler()
    next(iter(sampler))
    state = sampler.state_dict()
    target = _sampler()
    before = target.state_dict()
    with pytest.raises(ValueError, match=match):
        target.load_state_dict({**state, field: value})
    assert target.state_dict()["queue"] == before["queue"] and target._drawn == 0
