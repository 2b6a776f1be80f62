"""The environment registry: discovery, construction by name, and clear errors."""

from __future__ import annotations

import subprocess
import sys

import pytest

from envsched_lightning.envs import Environment, env_names, make_env, register_env
from envsched_lightning.envs.inspect import main
from envsched_lightning.envs.registry import builtin_env_names
from tests.data_roots import data_root


def test_builtin_worlds_are_discovered():
    names = builtin_env_names()
    assert len(names) >= 6
    assert set(names) <= set(env_names())


def test_make_env_passes_options_and_sets_the_name():
    env = make_env("banking", num_tasks=12, seed=7)
    assert isinstance(env, Environment) and env.name == "banking" and len(env.tasks()) == 12
    assert {t.spec.env for t in env.tasks()} == {"banking"}


def test_unknown_name_lists_valid_ones():
    with pytest.raises(ValueError, match="valid names: .*banking"):
        make_env("no_such_world")


def test_a_name_cannot_be_registered_twice():
    @register_env("dup_test_env")
    def first(**_):
        raise NotImplementedError

    with pytest.raises(ValueError, match="registered twice"):
        register_env("dup_test_env")(lambda **_: None)
    assert register_env("dup_test_env")(first) is first  # re-registering the same factory is harmless


def test_scheduling_core_does_not_import_envs():
    code = ("import sys, envsched_lightning.scheduling; "
            "print(any(m.startswith('envsched_lightning.envs') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_inspect_prints_a_table(capsys):
    assert main(["banking", "airline", "--num-tasks", "30"]) == 0
    out = capsys.readouterr().out
    header, _, bank, air = out.splitlines()[:4]
    assert header.split()[:4] == ["env", "data", "tasks", "tools"] and "multi_hop" in header
    assert bank.split()[:4] == ["banking", "-", "30", "7"] and air.split()[0] == "airline"  # data: a BFCL version
    assert "verifiers [" in out and "rewards [" in out


def test_inspect_reports_unknown_names(capsys):
    assert main(["no_such_world"]) == 2
    assert "unknown environment" in capsys.readouterr().err


def test_inspect_reads_benchmark_data_from_the_flag_or_envsched_data(capsys, monkeypatch):
    root = data_root("bfcl_v3", "tau_bench")
    monkeypatch.delenv("ENVSCHED_DATA", raising=False)
    assert main(["bfcl_simple"]) == 2
    assert "env.bfcl_simple.data_dir" in capsys.readouterr().err
    assert main(["bfcl_simple", "tau_retail", "--data", str(root)]) == 0
    assert "tau_retail" in capsys.readouterr().out
    monkeypatch.setenv("ENVSCHED_DATA", str(root))
    assert main(["bfcl_simple"]) == 0


@pytest.mark.parametrize("name", ["bfcl_web_search_base", "bfcl_memory_kv", "bfcl_format_sensitivity"])
def test_upstream_categories_without_support_are_refused_by_name_with_the_reason(name):
    with pytest.raises(ValueError, match=rf"environment '{name}' is not supported: BFCL's"):
        make_env(name)


def test_inspect_all_lists_what_the_data_allows_and_names_what_it_cannot_build(capsys):
    """v3 data holds no miss_func category: --all lists the rest and says why that one is missing."""
    assert main(["--all", "--data", str(data_root("bfcl_v3", "acebench", "tau_bench"))]) == 0
    captured = capsys.readouterr()
    assert "bfcl_multi_turn_base" in captured.out and "banking" in captured.out
    assert "bfcl_multi_turn_miss_func: cannot build" in captured.err
