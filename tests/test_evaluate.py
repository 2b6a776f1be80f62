"""`evaluate.py` end to end on the tiny Qwen3, and the shared scoring it has with training's validation."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import lightning as L
import pytest
import torch
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf
from torch.utils.data import DataLoader

from datamodules.datasets import HeldOutTasks
from envsched_lightning.envs.score import score_file
from envsched_lightning.evaluation import PROMPT_TOO_LONG, aggregate, benchmark_of, greedy_rollouts
from envsched_lightning.module import TaskBatch
from envsched_lightning.threads import set_torch_threads

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # evaluate.py and train.py are scripts at the repository root
from evaluate import evaluate  # noqa: E402
from train import drop_unselected_envs  # noqa: E402

from tests.data_roots import data_root  # noqa: E402
from tests.run_configs import compose_cfg  # noqa: E402

CONF = REPO / "conf"
WORLDS = ["env=[banking,calendar]", "env.banking.num_tasks=12", "env.calendar.num_tasks=12"]
FAST = ["model.sampling.max_new_tokens=24", "torch_threads=1"]


PAPER_ENVS = ("bfcl_simple", "bfcl_multiple", "bfcl_parallel", "bfcl_parallel_multiple", "bfcl_java", "bfcl_javascript",
              "bfcl_irrelevance", "bfcl_live_simple", "bfcl_live_multiple", "bfcl_live_parallel",
              "bfcl_live_parallel_multiple", "bfcl_live_irrelevance", "bfcl_live_relevance", "bfcl_multi_turn_base",
              "tau_retail_test", "tau_airline_test", "acebench_agent_multi_step", "acebench_agent_multi_turn")  # fmt: skip


def save_run(run_dir: Path, cfg: DictConfig, module) -> Path:
    """What train.py leaves: config_resolved.yaml and checkpoints/last.ckpt (LoRA: the adapter only)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config_resolved.yaml").write_text(OmegaConf.to_yaml(OmegaConf.to_container(cfg, resolve=True)))
    ckpt = {"state_dict": module.state_dict()}
    module.on_save_checkpoint(ckpt)
    path = run_dir / "checkpoints" / "last.ckpt"
    path.parent.mkdir()
    torch.save(ckpt, path)
    return path


@pytest.fixture(scope="module")
def warm_run(tmp_path_factory):
    """A tiny full-parameter model after a short warm start (non-zero scores), saved as a training run."""
    run_dir = tmp_path_factory.mktemp("run")
    cfg = compose_cfg("train", *WORLDS, f"output_dir={run_dir}", "model.warm_start.steps=60", "model.warm_start.batch_size=8",
                      "data.eval_per_env=2")  # fmt: skip
    drop_unselected_envs(cfg)
    set_torch_threads(1)  # as train.py and evaluate.py on CPU: more threads only wait for each other here
    torch.manual_seed(0)
    module = instantiate(cfg.model)
    envs = [instantiate(node) for node in cfg.env.values()]
    module.warm_start([(t, e) for e in envs for t in e.tasks()])
    return save_run(run_dir, cfg, module), module, envs


def test_aggregate_means_per_env_per_benchmark_and_overall():
    results = [("bfcl_simple", 1.0), ("bfcl_simple", 0.0), ("bfcl_multiple", 1.0),
               ("tau_retail", 0.0), ("tau_retail", 0.5), ("banking", 1.0)]  # fmt: skip
    s = aggregate(results)
    assert [(e.env, e.tasks, e.score) for e in s.envs] == [("bfcl_simple", 2, 0.5), ("bfcl_multiple", 1, 1.0),
                                                           ("tau_retail", 2, 0.25), ("banking", 1, 1.0)]  # fmt: skip
    bfcl = s.benchmarks[0]
    assert (bfcl.name, bfcl.tasks, bfcl.score, bfcl.task_weighted) == ("bfcl", 3, 0.75, pytest.approx(2 / 3))
    assert s.mean_of_benchmarks == pytest.approx((0.75 + 0.25 + 1.0) / 3) and s.task_weighted == pytest.approx(3.5 / 6)
    assert s.metrics()["eval/benchmark/tau_bench"] == 0.25 and s.metrics()["eval/score"] == s.task_weighted
    assert [benchmark_of(n) for n in ("acebench_special_incomplete", "tau_airline", "airline")] == ["acebench", "tau_bench", "worlds"]


def test_evaluate_checkpoint_table_equals_per_task_means_and_rescores_offline(warm_run, tmp_path):
    ckpt, trained, _ = warm_run
    out = evaluate(compose_cfg("evaluate", *WORLDS, *FAST, "limit=6", f"ckpt_path={ckpt}", f"output_dir={tmp_path}"))
    # the run's tokenizer and weights, although this config's tokenizer corpus is other worlds' sizes
    assert out["module"].tokenizer.get_vocab() == trained.tokenizer.get_vocab()
    assert all(torch.equal(a, b) for a, b in zip(out["module"].state_dict().values(), trained.state_dict().values()))
    rewards: dict[str, list[float]] = {}
    for e in out["episodes"]:
        rewards.setdefault(e.env, []).append(e.reward)
    assert {k: len(v) for k, v in rewards.items()} == {"banking": 6, "calendar": 6}
    assert 0 < sum(map(sum, rewards.values())) < 12, "the warm-started model should pass some tasks, not all"
    saved = json.loads((tmp_path / "scores.json").read_text())
    assert saved["official"] and saved["limit"] == 6
    means = {env: sum(r) / len(r) for env, r in rewards.items()}
    assert {e["env"]: e["score"] for e in saved["scores"]["envs"]} == pytest.approx(means)
    assert saved["scores"]["benchmarks"][0]["score"] == pytest.approx(sum(means.values()) / 2)
    everything = [r for rs in rewards.values() for r in rs]
    assert saved["scores"]["overall"]["task_weighted"] == pytest.approx(sum(everything) / 12)
    rows = list(csv.DictReader((tmp_path / "scores.csv").open()))
    assert {r["env"]: float(r["score"]) for r in rows if r["level"] == "env"} == pytest.approx(means, abs=1e-6)
    assert rows[-1]["level"] == "overall" and int(rows[-1]["tasks"]) == 12
    assert "| worlds | banking | 6 |" in (tmp_path / "scores.md").read_text()
    # the per-task outputs re-score offline to the same verdicts (score CLI == agent loop)
    envs = {e.name: e for e in (instantiate(n) for n in compose_cfg("evaluate", *WORLDS).env.values())}
    for env, online in rewards.items():
        lines = [json.loads(line) for line in (tmp_path / "outputs" / f"{env}.jsonl").read_text().splitlines()]
        assert [rec["reward"] for rec in lines] == online
        _, verdicts = score_file(envs[env], tmp_path / "outputs" / f"{env}.jsonl")
        assert [v["reward"] for v in verdicts] == online


def test_validation_logs_what_the_shared_evaluation_computes(warm_run):
    _, module, envs = warm_run
    pairs = [(t, e) for e in envs for t in e.tasks()[:5]]
    loader = DataLoader(HeldOutTasks(tuple(pairs)), batch_size=4, collate_fn=TaskBatch.collate)
    trainer = L.Trainer(accelerator="cpu", logger=False, enable_progress_bar=False, enable_model_summary=False)
    logged = trainer.validate(module, dataloaders=loader, verbose=False)[0]
    direct = aggregate((e.env, e.reward) for e in greedy_rollouts(
        module.engine, module.tokenizer, pairs, module.sampling, batch_size=4, **module.loop_kwargs))  # fmt: skip
    assert logged == pytest.approx(direct.metrics("eval")) and 0 < logged["eval/score"] < 1
    assert {"eval/score", "eval/score/banking", "eval/score/calendar", "eval/benchmark/worlds"} <= set(logged)


def test_lora_checkpoint_holds_the_adapter_and_loads_with_the_runs_settings(tmp_path):
    lora = "model.policy.lora={r:4,alpha:8,dropout:0.0,target_modules:[q_proj,v_proj]}"
    cfg = compose_cfg("train", *WORLDS, lora, f"output_dir={tmp_path / 'run'}")
    drop_unselected_envs(cfg)
    module = instantiate(cfg.model)
    with torch.no_grad():
        for name, p in module.model.named_parameters():
            if "lora_B" in name:
                p.normal_(0.0, 0.5)
    ckpt = save_run(tmp_path / "run", cfg, module)
    held = torch.load(ckpt, weights_only=False)["state_dict"]
    assert held and all("lora_" in k for k in held)  # the frozen base is not in the file
    # the eval config names no LoRA: the run's model.policy (LoRA r=4) comes from its config_resolved.yaml
    out = evaluate(compose_cfg("evaluate", *WORLDS, *FAST, "limit=1", f"ckpt_path={ckpt}", f"output_dir={tmp_path / 'eval'}"))
    state = out["module"].state_dict()
    assert all(torch.equal(state[k], v) for k, v in held.items())
    assert out["module"].tokenizer.get_vocab() == module.tokenizer.get_vocab()


def test_training_rules_are_refused_and_long_prompts_score_zero(tmp_path, warm_run):
    cfg = compose_cfg("evaluate", *WORLDS, "+env.banking.rules=training", f"output_dir={tmp_path}")
    with pytest.raises(ValueError, match=r"env\.banking\.rules=training.*allow_training_rules=true"):
        evaluate(cfg)
    _, module, envs = warm_run
    episodes = greedy_rollouts(module.engine, module.tokenizer, [(envs[0].tasks()[0], envs[0])], module.sampling,
                               max_seq_len=module.sampling.max_new_tokens + 10)  # fmt: skip
    assert episodes[0].reward == 0.0 and episodes[0].reason.startswith(PROMPT_TOO_LONG)


def test_real_model_config_composes_with_vllm():
    cfg = compose_cfg("evaluate", "model=qwen3_8b", "model_path=/weights/Qwen3-8B", "rollout=vllm", "output_dir=/x")
    assert cfg.model.policy.path == cfg.model.engine.model_path == "/weights/Qwen3-8B"
    assert cfg.model.engine._target_.endswith("VLLMEngine") and cfg.model.chat_template_kwargs.enable_thinking is False


def test_benchmark_category_with_limit(tmp_path):
    out = evaluate(compose_cfg("evaluate", "env=[bfcl_simple,banking]", f"env.bfcl_simple.data_dir={data_root('bfcl_v3')}",
                               "env.banking.num_tasks=12", "limit=3", "model.grpo.max_seq_len=2048", *FAST,
                               f"output_dir={tmp_path}"))  # fmt: skip
    s = out["scores"]
    assert [(e.env, e.benchmark, e.tasks) for e in s.envs] == [("bfcl_simple", "bfcl", 3), ("banking", "worlds", 3)]
    assert [b.name for b in s.benchmarks] == ["bfcl", "worlds"] and s.tasks == 6
    ids = [json.loads(x)["id"] for x in (tmp_path / "outputs" / "bfcl_simple.jsonl").read_text().splitlines()]
    assert ids == ["simple_0", "simple_1", "simple_2"]
    assert all(not e.reason.startswith(PROMPT_TOO_LONG) for e in out["episodes"])


def test_acebench_agent_reports_end_state_and_process_accuracy(tmp_path):
    root = data_root("acebench")
    out = evaluate(compose_cfg("evaluate", "env=[acebench_agent_multi_step,acebench_agent_multi_turn]", "limit=1",
                               f"env.acebench_agent_multi_step.data_dir={root}",
                               f"env.acebench_agent_multi_turn.data_dir={root}",
                               "model.grpo.max_seq_len=4096", *FAST, f"output_dir={tmp_path}"))  # fmt: skip
    assert [b.name for b in out["scores"].benchmarks] == ["acebench_agent"]
    metrics = json.loads((tmp_path / "scores.json").read_text())["benchmark_metrics"]
    assert set(metrics) == {"acebench_agent_multi_step", "acebench_agent_multi_turn"}
    assert all({"end_state", "process"} <= set(m) for m in metrics.values())
    assert set(metrics["acebench_agent_multi_turn"]) >= {"user_turns", "user_tokens"}  # the simulated user's cost
    assert "The benchmarks' own metrics" in (tmp_path / "scores.md").read_text()
    line = json.loads((tmp_path / "outputs" / "acebench_agent_multi_turn.jsonl").read_text().splitlines()[0])
    assert line["scores"]["end_state"] == line["reward"] and "process" in line["reason"]


def _paper_data_root() -> Path:
    """BFCL-v3, ACEBench, the tau-bench databases and tau-bench's official task lists (tests/data_roots.py)."""
    return data_root("bfcl_v3", "acebench", "tau_bench", "tau_bench_tasks")


def test_paper_evaluation_averages_the_three_suites_and_says_what_differs(tmp_path):
    root = _paper_data_root()
    out = evaluate(compose_cfg("evaluate", "experiment=paper_eval", "limit=1", "model.grpo.max_seq_len=4096", *FAST,
                               f"output_dir={tmp_path / 'out'}", *(f"env.{e}.data_dir={root}" for e in PAPER_ENVS)))  # fmt: skip
    assert [b.name for b in out["scores"].benchmarks] == ["bfcl", "tau_bench", "acebench_agent"]
    paper = json.loads((tmp_path / "out" / "scores.json").read_text())["paper"]
    assert list(paper["suites"]) == ["BFCL-v3", "tau-Bench", "ACEBench-Agent"]
    assert paper["average"] == pytest.approx(sum(paper["suites"].values()) / 3)
    assert "simulated user of tau_retail_test, tau_airline_test, acebench_agent_multi_turn: the scripted user" in paper["differences"][0]
    text = (tmp_path / "out" / "scores.md").read_text()
    assert "The paper's evaluation" in text and "Differs from the paper's setting" in text
    assert {e.env for e in out["episodes"]} == set(PAPER_ENVS)


def test_one_switch_makes_a_model_play_every_simulated_user(tmp_path):
    """`user=model user_model_path=DIR` reaches the three environments with a user and the report names it (the
    model itself is loaded only when an episode needs it: tests/envs/test_users.py plays one)."""
    from evaluate import users_played

    root = _paper_data_root()
    cfg = compose_cfg("evaluate", "experiment=paper_eval", "user=model", f"user_model_path={tmp_path / 'my-user'}")
    names = ("tau_retail_test", "tau_airline_test", "acebench_agent_multi_step", "acebench_agent_multi_turn")
    envs = {n: instantiate(cfg.env[n], data_dir=str(root)) for n in names}
    assert [envs[n].simulated_user.model_path for n in names if n != "acebench_agent_multi_step"] == [str(tmp_path / "my-user")] * 3
    (line,) = users_played(envs, "the paper's are LLM users")
    assert line == ("simulated user of tau_retail_test, tau_airline_test, acebench_agent_multi_turn: the model user my-user "
                    "(greedy, up to 128 tokens a message); the paper's are LLM users")  # fmt: skip
    with pytest.raises(Exception, match="user=model needs user_model_path"):  # hydra's InstantiationException names the key
        instantiate(compose_cfg("evaluate", "experiment=paper_eval", "user=model").env.tau_retail_test, data_dir=str(root))


def test_an_evaluation_experiment_is_refused_by_train():
    from train import train

    with pytest.raises(ValueError, match="python evaluate.py experiment"):
        train(compose_cfg("train", "experiment=paper_eval"))


def test_labelled_unofficial_run(tmp_path):
    out = evaluate(compose_cfg("evaluate", "env=[bfcl_simple]", f"env.bfcl_simple.data_dir={data_root('bfcl_v3')}",
                               "env.bfcl_simple.rules=training", "allow_training_rules=true", "limit=1",
                               "model.grpo.max_seq_len=2048", *FAST, f"output_dir={tmp_path}"))  # fmt: skip
    assert not out["official"] and json.loads((tmp_path / "scores.json").read_text())["official"] is False
    assert (tmp_path / "scores.md").read_text().startswith("NOT OFFICIAL (env.bfcl_simple.rules=training)")


@pytest.mark.parametrize("content", [None, b"", b"not a checkpoint", "no_state_dict"])
def test_a_bad_checkpoint_is_refused_with_its_path(tmp_path, content):
    from evaluate import load_weights

    ckpt = tmp_path / "run.ckpt"
    if content == "no_state_dict":
        torch.save({"epoch": 0}, ckpt)
    elif content is not None:
        ckpt.write_bytes(content)
    with pytest.raises((ValueError, FileNotFoundError), match=f"ckpt_path={ckpt}: "):
        load_weights(torch.nn.Linear(2, 2), str(ckpt))  # the file is refused before the module is touched


def test_split_held_out_scores_exactly_the_tasks_the_run_held_out(warm_run, tmp_path):
    """`split=held_out`: the run's own environments and held-out split, whatever this config's env says."""
    from datamodules.task_pool import build_pool

    ckpt, _, envs = warm_run
    run = OmegaConf.load(Path(ckpt).parent.parent / "config_resolved.yaml")
    held = build_pool({e.name: e for e in envs}, run.data.eval_per_env).held_out
    out = evaluate(compose_cfg("evaluate", "env=[messaging]", *FAST, "split=held_out", f"ckpt_path={ckpt}",
                               f"output_dir={tmp_path}"))  # fmt: skip
    assert sorted(e.task_key for e in out["episodes"]) == sorted(t.spec.key for t, _ in held)
    assert {e.env for e in out["episodes"]} == {"banking", "calendar"}  # the run's worlds, not env=[messaging]
    with pytest.raises(ValueError, match="split=held_out: the held-out tasks are a run's; set ckpt_path"):
        evaluate(compose_cfg("evaluate", *WORLDS, "split=held_out", f"output_dir={tmp_path / 'x'}"))


def test_split_held_out_refuses_a_run_config_naming_other_code(warm_run, tmp_path):
    ckpt, _, _ = warm_run
    run_dir = tmp_path / "forged"
    (run_dir / "checkpoints").mkdir(parents=True)
    (run_dir / "checkpoints" / "last.ckpt").write_bytes(Path(ckpt).read_bytes())
    run = OmegaConf.load(Path(ckpt).parent.parent / "config_resolved.yaml")
    run.env.banking._target_ = "os.system"
    (run_dir / "config_resolved.yaml").write_text(OmegaConf.to_yaml(run))
    with pytest.raises(ValueError, match=r"env\.banking\._target_='os.system': only known environment classes"):
        evaluate(compose_cfg("evaluate", *WORLDS, "split=held_out", f"ckpt_path={run_dir / 'checkpoints' / 'last.ckpt'}",
                             f"output_dir={tmp_path / 'out'}"))  # fmt: skip


def test_a_suite_with_episodes_never_played_has_no_score_and_the_run_says_what_to_change():
    """A prompt too long for max_seq_len scores 0 without the model answering: that is no score of the
    model's, so its suite shows what was not played and the average leaves it out and says so."""
    from types import SimpleNamespace

    from envsched_lightning.evaluation import paper_markdown, paper_score, unplayed_tasks
    from evaluate import not_played_notice

    def episode(env: str, reward: float, reason: str = "") -> SimpleNamespace:
        return SimpleNamespace(env=env, reward=reward, reason=reason)

    too_long = f"{PROMPT_TOO_LONG}: 1600 tokens, more than max_seq_len - max_new_tokens = 464; scored 0"
    episodes = [episode("bfcl_simple", 1.0), episode("bfcl_irrelevance", 0.0), episode("tau_retail_test", 0.0, too_long),
                episode("tau_airline_test", 0.0), episode("acebench_agent_multi_step", 0.5)]  # fmt: skip
    scores = aggregate((e.env, e.reward) for e in episodes)
    suites = {"bfcl": "BFCL-v3", "tau_bench": "tau-Bench", "acebench_agent": "ACEBench-Agent"}
    paper = paper_score(scores, suites, unplayed_tasks(episodes))
    assert dict(paper.suites) == {"BFCL-v3": 0.5, "tau-Bench": None, "ACEBench-Agent": 0.5}
    assert paper.not_played == (("tau-Bench", 1, 2),) and not paper.complete and paper.average == 0.5
    text = paper_markdown(paper, "", [])
    assert "| tau-Bench | not played: 1 of 2 tasks |" in text
    assert "| **average** | 50.00 over 2 of 3 suites: not the paper's number |" in text
    notice = not_played_notice(episodes, 512, 48)
    assert "1 of 5 tasks not played (tau_retail_test)" in notice and "model.grpo.max_seq_len=1648 plays them all" in notice
    played = [e for e in episodes if not e.reason]
    everything = paper_score(aggregate((e.env, e.reward) for e in played), suites, unplayed_tasks(played))
    assert everything.complete and "| **average** | **33.33** |" in paper_markdown(everything, "", [])
    assert not_played_notice(played, 512, 48) is None


def test_a_weights_file_cut_short_is_one_line_naming_it(tmp_path):
    """`model_path=` a folder whose model.safetensors stopped copying halfway: exit 2 and the file named, no traceback."""
    import subprocess

    from envsched_lightning.models import build_offline_tokenizer, build_tiny_qwen3

    folder = tmp_path / "model"
    build_tiny_qwen3(vocab_size=400).save_pretrained(folder)
    build_offline_tokenizer(vocab_size=400).save_pretrained(folder)
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])
    proc = subprocess.run([sys.executable, "evaluate.py", "model=pretrained", f"model_path={folder}", "env=[banking]",
                           "limit=1", f"hydra.run.dir={tmp_path}/run"], capture_output=True, text=True, timeout=300,
                          cwd=REPO)  # fmt: skip
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert f"error: model weights {weights} (" in proc.stderr and "copy or download the weights" in proc.stderr
    assert "Traceback" not in proc.stderr
