"""The rehearsal's model writer as a user runs it: no benchmark data needed for the built-in worlds."""

from __future__ import annotations

import json

from envsched_lightning.models.checkpoint import experiment_envs, main


def test_the_default_experiment_needs_no_benchmark_data(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ENVSCHED_DATA", str(tmp_path / "no-data-here"))
    envs, kwargs = experiment_envs("tiny_cpu")
    assert {e.name for e in envs} == {"banking", "calendar", "messaging"} and isinstance(kwargs, dict)
    main([str(tmp_path / "model"), "--sft-steps", "1"])
    config = json.loads((tmp_path / "model" / "config.json").read_text())
    assert config["model_type"] == "qwen3"
    assert "3 environments" in capsys.readouterr().out
