"""Run every shell command that README.md and docs/*.md show, as written, with small sizes.

Each command of a ```bash block is matched against RULES (first match wins). A rule runs the
command with extra arguments that shrink it (fewer steps, seeds or tasks; later arguments
override earlier ones for Hydra and argparse alike) and placeholders filled in, or skips it with
the reason (a GPU, or a check CI runs as its own target). A command no rule matches fails the
check, so a command added to the docs is classified here before it ships.

Usage (from the repository root, after `make setup`):
    .venv/bin/python scripts/docs_commands.py            # run them all, print a table of wall times
    .venv/bin/python scripts/docs_commands.py --list     # show what would run, and how
    .venv/bin/python scripts/docs_commands.py --only sim # those whose text contains "sim"
    .venv/bin/python scripts/docs_commands.py --workers 2 # two at a time (a command waits for those it reads)
    .venv/bin/python scripts/docs_commands.py --shard 1/2 # half of them (with what they read); --shard 2/2 the rest
    .venv/bin/python scripts/docs_commands.py --vllm only # the commands on .venv-vllm (--vllm without: the others)
`python` in a command is the project's `.venv/bin/python` (the docs assume the venv is active).
Exit status 1 when any command fails or is unclassified.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), *sorted((REPO / "docs" / "results").glob("*.md"))]
# paths the docs show as examples of a run's outputs: filled with what an earlier command wrote
CKPT_PLACEHOLDER = "outputs/.../checkpoints/last.ckpt"
RESULTS_PLACEHOLDER = "outputs/grpo_efficiency/grpo_efficiency.json"
MODEL_PLACEHOLDER = "/path/to/model"  # a local causal LM: the SmolLM2 folder the make targets write
PLACEHOLDERS = (CKPT_PLACEHOLDER, RESULTS_PLACEHOLDER, MODEL_PLACEHOLDER)
PRODUCERS = {  # the command whose outputs fill each placeholder (see `outputs`)
    CKPT_PLACEHOLDER: lambda command: command.split() == ["python", "train.py"],
    RESULTS_PLACEHOLDER: lambda command: "benchmarks.grpo_efficiency" in command and "--replot" not in command,
    MODEL_PLACEHOLDER: lambda command: re.match(r"make (train-smollm2|smollm2-quick)\b", command) is not None,
}
SMOLLM2_DIR = REPO / "models" / "SmolLM2-135M-Instruct"  # the Makefile's SMOLLM2_DIR

# a few seconds per train.py run: 2 GRPO steps of 3 tasks x 2 rollouts, a short warm start
SMALL_TRAIN = ("steps=2 data.steps_per_epoch=2 data.batch_size=3 data.eval_per_env=1 model.grpo.group_size=2 "
               "model.sampling.max_new_tokens=8 model.warm_start.steps=2")  # fmt: skip

# the real-model experiments (SmolLM2-135M) at 1 GRPO step of 2 tasks x 2 rollouts, 1 held-out task per world, no
# score before training: the command works as written (make test-smollm2 checks what the model does)
SMOLLM2_TRAIN = ("steps=1 data.steps_per_epoch=1 data.batch_size=2 data.eval_per_env=1 model.grpo.group_size=2 "
                 "model.sampling.max_new_tokens=16 model.warm_start.steps=1 model.warm_start.batch_size=2 "
                 "trainer.num_sanity_val_steps=0")  # fmt: skip
# the generic model command on the SmolLM2 folder: SMALL_TRAIN at 1 step, no score before training
PRETRAINED_TRAIN = f"{SMALL_TRAIN} steps=1 data.steps_per_epoch=1 model.warm_start.steps=1 trainer.num_sanity_val_steps=0"


@dataclass(frozen=True)
class Rule:
    pattern: str  # regex searched in the command
    extra: str | None  # appended to the command; None: skip
    why: str  # what the extra does, or why the command is skipped
    rewrite: tuple[tuple[str, str], ...] = ()  # (text in the docs, what runs instead: a placeholder or "{tmp}/...")

    def matches(self, command: str) -> bool:
        return re.search(self.pattern, command) is not None


RULES = [
    Rule(r"^make test\b", None, "CI runs it first (.ci/run)"),
    Rule(r"^make rehearsal\b", None, "CI runs it (.ci/run)"),
    Rule(r"^make test-vllm\b", None, "CI runs it (.ci/run)"),
    Rule(r"^make test-smollm2", None, "CI runs it (.ci/run)"),
    Rule(r"^make smollm2-quick\b", SMOLLM2_TRAIN, "the quick real-model check, 1 step"),
    Rule(r"^make smollm2\b", "", "as written (keeps a folder that verifies)"),
    Rule(r"^make train-smollm2\b", SMOLLM2_TRAIN, "the real-model experiment, 1 step"),
    Rule(r"^make train\b", SMALL_TRAIN, "the CPU default, 2 steps"),
    Rule(r"venv-vllm.*benchmarks\.real_model_step", "--rounds 1 --rows 'vllm, top_layers=8 + compact'", "1 round, the vLLM row"),
    Rule(r"benchmarks\.real_model_step", "--rounds 1 --rows 'all three'", "1 round, the fastest row"),
    Rule(r"pip install .*\[vllm", None, "GPU machine: the CUDA build of vLLM"),
    Rule(r"experiment=envsched_qwen3_8b.*--cfg job", "", "prints the config only"),
    Rule(r"experiment=envsched_qwen3_8b", None, "GPU and Qwen3-8B weights; `make rehearsal` runs this experiment on CPU"),
    Rule(r"train\.py model=pretrained model_path=", PRETRAINED_TRAIN, "1 GRPO step of the SmolLM2 folder (CPU sizes)"),
    Rule(r"train\.py experiment=sim", "sim.steps=10 sim.seeds=1", "10 simulated steps, 1 seed"),
    Rule(r"train\.py", SMALL_TRAIN, "2 GRPO steps"),
    Rule(r"^data\.sampler\.|^\+data\.sampler|^data\.dataloader", None, "overrides for verl's own command line"),
    Rule(r"scripts/verl_check\.sh", None, "CI runs it (make test-verl)"),
    Rule(r"scripts/gpu_smoke\.sh", None, "needs a CUDA GPU (its --device cpu check of the script took 12 min on 2 cores)"),
    Rule(r"benchmarks\.weight_sync", "--rounds 1 --models rehearsal --group 2 --tasks-per-world 1 --max-new-tokens 8",
         "1 round, the tiny model"),
    Rule(r"benchmarks\.engine_throughput", "--rounds 1 --tasks-per-world 1 --group 2 --max-new-tokens 8", "1 round"),
    Rule(r"benchmarks\.grpo_efficiency --replot", "--out {tmp}", "re-plots the results of the run below"),
    Rule(r"benchmarks\.grpo_efficiency --data",
         "--seeds 1 --steps 2 --eval-every 2 --batch-size 3 --group-size 2 --tasks-per-env 6 --eval-per-env 1 "
         "--warm-steps 4 --schedulers random envsched --workers 1 --out {tmp}/grpo_efficiency_pool",
         "2 steps, 1 seed, 2 schedulers, 4 warm-start steps"),  # fmt: skip
    Rule(r"benchmarks\.grpo_efficiency",
         "--seeds 1 --steps 2 --eval-every 2 --batch-size 3 --group-size 2 --tasks-per-env 6 --eval-per-env 1 "
         "--schedulers random envsched --workers 1 --out {tmp}/grpo_efficiency", "2 steps, 1 seed, 2 schedulers"),  # fmt: skip
    Rule(r"benchmarks\.rollout_efficiency", "--seeds 1 --steps 10", "10 steps, 1 seed"),
    Rule(r"benchmarks\.prediction_quality", "--seeds 1 --checkpoints 5", "1 seed, 1 checkpoint"),
    Rule(r"benchmarks\.scheduler_scaling", "--sizes 10000 --steps 2 --repeat 1", "10k tasks, 2 steps, once"),
    Rule(r"benchmarks\.metadata_ceiling", "--worlds 1", "1 world per mechanism"),
    Rule(r"benchmarks\.env_effects", "--worlds 1 --steps 20", "1 world, 20 steps (a figure into the temporary folder)",
         rewrite=(("docs/results/env_effects.png", "{tmp}/env_effects.png"),)),
    Rule(r"benchmarks\.near_copies", "--steps 4 --seeds 1", "4 steps, 1 seed (BFCL live from the data root)"),
    Rule(r"benchmarks[./]adapter_rows", "--rows 20000", "20k rows"),
    Rule(r"^git worktree add \.tmp/", "", "as written (the older checkout the scaling benchmark's --before reads)"),
    Rule(r"benchmarks\.baseline_sweep", "--worlds 1 --seeds 1 --steps 10 --workers 1", "1 world, 1 seed, 10 steps"),
    Rule(r"benchmarks\.world_family --quick", "--workers 2", "as written (8 worlds x 2 seeds x 60 steps), on both cores"),
    Rule(r"benchmarks\.world_family --worlds 0", "--seeds 1 --steps 12 --workers 1", "the named worlds, 1 seed, 12 steps"),
    Rule(r"benchmarks\.world_family", "--worlds 1 --seeds 1 --steps 12 --workers 1", "1 world per mechanism, 1 seed, 12 steps"),
    Rule(r"benchmarks\.trl_throughput", "--steps 3 --batch 2 --group 2 --max-new-tokens 8", "3 steps, 2 tasks x G2"),
    Rule(r"benchmarks\.torch_threads", "--threads 1 2 --steps 2 --repeats 1", "2 steps, 1 round"),
    Rule(r"evaluate\.py.*model=qwen3_8b", None, "GPU and Qwen3-8B weights; tests/test_evaluate.py covers the code on the tiny model"),
    Rule(r"evaluate\.py experiment=paper_eval", "limit=1 model.sampling.max_new_tokens=8 model.grpo.max_seq_len=4096 "
         "hydra.run.dir={tmp}", "1 task per environment (`make docs-check` gives it a data root with tau-bench's task lists)"),
    Rule(r"evaluate\.py", "limit=2 model.sampling.max_new_tokens=8 hydra.run.dir={tmp}", "2 tasks per environment"),
    Rule(r"envsched_lightning\.adapters\.verl_main", None, "verl 0.9 and GPUs; tests/verl/test_verl_fit.py runs it on CPU without Ray"),
    Rule(r"verl_constraints\.txt|^pip install --no-deps -e \.$", None, "in verl's own environment; scripts/verl_check.sh installs this way"),
    Rule(r"envsched_lightning\.data fetch .*\b(all|acebench|tau_bench)\b", None,
         "GitHub archives, unreachable from CI; tests/test_data_fetch.py serves the same archives on 127.0.0.1"),
    Rule(r"envsched_lightning\.data fetch bfcl", "--to {tmp}/data", "the real wheel, into a scratch folder"),
    Rule(r"envsched_lightning\.checkpoints convert", "", "converts the checkpoint `python train.py` wrote",
         rewrite=(("old/last.ckpt", CKPT_PLACEHOLDER), ("new/last.ckpt", "{tmp}/new/last.ckpt"))),
    Rule(r"-m envsched_lightning\.", "", "as written"),
    Rule(r"^python docs/examples/", "", "as written (the example checks itself)"),
]
# commands that read benchmark data (BFCL, ACEBench, tau-bench environments) need ENVSCHED_DATA; the
# check uses ../shared/data when it is not set (as `make rehearsal`) and skips them when neither exists
NEEDS_DATA = re.compile(r"env=\[[^\]]*\b(bfcl_|acebench_|tau_)|benchmarks\.near_copies")
SHARED_DATA = REPO.parent / "shared" / "data"


def doc_commands() -> list[tuple[str, str]]:
    """(file, command) for each command in a bash block: comments dropped, continuations joined."""
    found = []
    for path in DOCS:
        for block in re.findall(r"```(?:bash|sh)\n(.*?)```", path.read_text(), re.S):
            joined = re.sub(r"\\\n\s*", " ", block)
            for line in joined.splitlines():
                command = re.sub(r"\s+#.*$", "", line).strip()
                if command and not command.startswith("#"):
                    found.append((str(path.relative_to(REPO)), command))
    return found


def rule_for(command: str) -> Rule | None:
    return next((r for r in RULES if r.matches(command)), None)


def rewritten(command: str, run_dir: Path) -> str:
    """`command` with its rule's example paths replaced (by placeholders an earlier command fills)."""
    rule = rule_for(command)
    for shown, runs in rule.rewrite if rule else ():
        command = command.replace(shown, runs.format(tmp=run_dir))
    return command


def planned(command: str, run_dir: Path, produced: dict[str, str]) -> tuple[Rule | None, str]:
    """The rule for `command` and the command line to run (placeholders filled, shrunk, outputs in `run_dir`)."""
    rule = rule_for(command)
    if rule is None or rule.extra is None:
        return rule, command
    if command.startswith("make ") and rule.extra:  # a training target: the overrides go through ARGS
        return rule, f'{command} ARGS="{rule.extra} hydra.run.dir={run_dir}"'

    run = rewritten(command, run_dir)
    for placeholder, path in produced.items():
        run = run.replace(placeholder, path)
    run = f"{run} {rule.extra.format(tmp=run_dir)}".strip()
    if "train.py" in run and "--cfg" not in run:
        if "hydra.run.dir=" not in command:  # a command that names its run folder keeps it (a later one reads it)
            run += f" hydra.run.dir={run_dir}"
        if CKPT_PLACEHOLDER in command:
            run = run.replace(" steps=2 ", " steps=4 ")  # resume past the checkpoint's 2 steps
    return rule, run


def outputs(command: str, run_dir: Path) -> dict[str, str]:
    """What a finished command wrote that a later one's placeholder stands for."""
    found = {CKPT_PLACEHOLDER: run_dir / "checkpoints" / "last.ckpt",
             RESULTS_PLACEHOLDER: run_dir / "grpo_efficiency" / "grpo_efficiency.json",
             MODEL_PLACEHOLDER: SMOLLM2_DIR / "config.json"}  # fmt: skip
    return {k: str(path.parent if k == MODEL_PLACEHOLDER else path) for k, path in found.items()
            if PRODUCERS[k](command) and path.is_file()}  # fmt: skip


class Rows(list):
    """Prints each (source, command, status, seconds) row as it is added: a long check shows progress."""

    def append(self, row: tuple[str, str, str, str]) -> None:
        super().append(row)
        source, command, status, seconds = row
        print(f"{seconds:>6}  {source:<20} {command}\n        {status}", flush=True)


# commands that take minutes here: started first, so two workers end together rather than one waiting on the last
HEAVY = re.compile(r"venv-vllm|smollm2|real_model_step|world_family --quick|baseline_sweep|metadata_ceiling|"
                   r"grpo_efficiency --data|paper_eval|trl_throughput|--seeds 20")  # fmt: skip


@dataclass
class Job:
    """One documented command to run, and the earlier commands whose outputs it reads."""

    index: int
    source: str
    command: str
    rule: Rule
    after: set[int]


WRITES = re.compile(r"(?:hydra\.run\.dir=|--out |--to )(\S{8,})")
"""A folder or file a command writes as the docs show it (later commands that name it read it)."""


def dependencies(jobs: list[Job], tmp: Path) -> None:
    """Fill each job's `after`: the producers of the placeholders it reads, the `git worktree add` that
    creates a folder it names, an earlier command that writes a path it names (WRITES), and (for `make`,
    which installs into the shared venv) the previous make."""
    worktrees = {j.index: j.command.split()[3] for j in jobs if j.command.startswith("git worktree add ")}
    last_make = None
    for n, job in enumerate(jobs):
        text = rewritten(job.command, tmp)
        job.after |= {other.index for other in jobs for p in PLACEHOLDERS if p in text and PRODUCERS[p](other.command)}
        job.after |= {i for i, folder in worktrees.items() if i != job.index and folder in job.command}
        job.after |= {e.index for e in jobs[:n] if any(path in job.command for path in WRITES.findall(e.command))}
        if job.command.startswith("make "):
            job.after |= {last_make} if last_make is not None else set()
            last_make = job.index


def shard_arg(text: str) -> tuple[set[int], int]:
    """`I/N` or `I,J/N` -> ({I, J}, N), shards numbered from 1."""
    picked, _, total = text.partition("/")
    shards, n = {int(i) for i in picked.split(",")}, int(total or 1)
    if not shards or not all(1 <= i <= n for i in shards):
        raise argparse.ArgumentTypeError(f"shards must lie in 1..{n}: {text!r}")
    return shards, n


def in_shards(jobs: list[Job], shards: set[int], n: int) -> list[Job]:
    """The jobs of `shards` of `n`: groups of jobs linked by `after` stay whole (and the commands on
    vLLM form one group), and groups go, heaviest first, to the lightest shard (a HEAVY command weighs
    4, any other 1), so shards are alike in size."""
    group = {j.index: j.index for j in jobs}

    def root(i: int) -> int:
        while group[i] != i:
            i = group[i]
        return i

    for job in jobs:
        for other in job.after:
            group[root(other)] = root(job.index)
    # every command on vLLM in one shard (the heaviest, so the first): two vLLM engines at once would
    # not fit this machine's memory beside the rest of CI
    on_vllm = [j.index for j in jobs if ".venv-vllm" in j.command]
    for i in on_vllm[1:]:
        group[root(i)] = root(on_vllm[0])
    members: dict[int, list[Job]] = {}
    for job in jobs:
        members.setdefault(root(job.index), []).append(job)
    weight = {r: sum(4 if HEAVY.search(j.command) else 1 for j in js) for r, js in members.items()}
    load, keep = [0] * n, []
    for r in sorted(members, key=lambda r: (-weight[r], r)):
        target = min(range(n), key=lambda k: (load[k], k))
        load[target] += weight[r]
        if target + 1 in shards:
            keep += members[r]
    return sorted(keep, key=lambda j: j.index)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="print the plan without running anything")
    parser.add_argument("--only", default=None, help="run only commands containing this text")
    parser.add_argument("--timeout", type=int, default=900, help="seconds per command")
    parser.add_argument("--workers", type=int, default=1,
                        help="commands run at once (a command that reads another's outputs waits for it)")
    parser.add_argument("--vllm", choices=("with", "only", "without"), default="with",
                        help="with: every command; only / without: just those run on .venv-vllm / all the others "
                             "(CI runs the vLLM ones alone: two vLLM engines, or one beside other heavy work, "
                             "starve each other's cores)")  # fmt: skip
    parser.add_argument("--shard", default="1/1", type=shard_arg,
                        help="I/N or I,J/N: run shards I (and J) of N, each a fixed share of the commands with "
                             "those they read (CI runs the shards in two lanes)")  # fmt: skip
    args = parser.parse_args(argv)
    env = dict(os.environ, PATH=f"{REPO / '.venv' / 'bin'}:{os.environ['PATH']}", WANDB_MODE="offline",
               WANDB_SILENT="true", TMPDIR=os.environ.get("TMPDIR", str(REPO / ".tmp")))  # fmt: skip
    Path(env["TMPDIR"]).mkdir(exist_ok=True)
    if not env.get("ENVSCHED_DATA") and SHARED_DATA.is_dir():
        env["ENVSCHED_DATA"] = str(SHARED_DATA)
    tmp = Path(tempfile.mkdtemp(prefix="docs_commands_", dir=env["TMPDIR"]))
    commands = doc_commands()
    failures, rows, seen, jobs = 0, Rows(), set(), []
    selected = [(f, c) for f, c in commands if not args.only or args.only in c]
    needed = {p for _, c in selected for p in PLACEHOLDERS if p in rewritten(c, tmp)}  # --only keeps their producers
    selected += [(f, c) for f, c in commands if (f, c) not in selected and any(PRODUCERS[p](c) for p in needed)]
    for source, command in selected:
        if command in seen:
            continue
        seen.add(command)
        rule = rule_for(command)
        if rule is None:
            failures += 1
            rows.append((source, command, "UNCLASSIFIED: add a rule to scripts/docs_commands.py", ""))
        elif rule.extra is None:
            rows.append((source, command, f"skipped: {rule.why}", ""))
        elif NEEDS_DATA.search(command) and not env.get("ENVSCHED_DATA"):
            rows.append((source, command, "skipped: benchmark data not found (set ENVSCHED_DATA)", ""))
        else:
            jobs.append(Job(len(seen), source, command, rule, set()))
    if args.vllm != "with":
        jobs = [j for j in jobs if (".venv-vllm" in j.command) == (args.vllm == "only")]
    dependencies(jobs, tmp)
    jobs = in_shards(jobs, *args.shard)
    produced: dict[str, str] = {}  # placeholder -> a path an earlier command (its PRODUCERS entry) wrote
    if args.list:
        for job in sorted(jobs, key=lambda j: bool(j.after)):
            _, run = planned(job.command, tmp / f"run_{job.index:02d}", produced)
            rows.append((job.source, job.command, f"would run: {run}", ""))
        print(f"{len(rows)} commands, {failures} unclassified; outputs under {tmp}")
        return 1 if failures else 0

    def run(job: Job, line: str) -> tuple[subprocess.CompletedProcess, float]:
        t0 = time.perf_counter()
        done = subprocess.run(["bash", "-c", line], cwd=REPO, env=env, capture_output=True, text=True, timeout=args.timeout)
        return done, time.perf_counter() - t0

    ran: list[tuple[float, str]] = []
    finished: set[int] = set()
    pending = sorted(jobs, key=lambda j: (not any(j.index in o.after for o in jobs), not HEAVY.search(j.command), j.index))
    with ThreadPoolExecutor(max_workers=max(1, args.workers)) as pool:
        running: dict = {}
        while pending or running:
            for job in [j for j in pending if j.after <= finished][: max(0, args.workers - len(running))]:
                pending.remove(job)
                run_dir = tmp / f"run_{job.index:02d}"
                _, line = planned(job.command, run_dir, produced)
                running[pool.submit(run, job, line)] = (job, run_dir)
            done_now, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done_now:
                job, run_dir = running.pop(future)
                finished.add(job.index)
                try:
                    done, seconds = future.result()
                except subprocess.TimeoutExpired:
                    failures += 1
                    rows.append((job.source, job.command, f"FAILED: still running after {args.timeout} s", f"{args.timeout} s"))
                    continue
                ran.append((seconds, job.command))
                if done.returncode != 0:
                    failures += 1
                    rows.append((job.source, job.command, f"FAILED (exit {done.returncode}): {done.stderr.strip()[-600:]}",
                                 f"{seconds:.0f} s"))  # fmt: skip
                    continue
                rows.append((job.source, job.command, f"ok: {job.rule.why}", f"{seconds:.0f} s"))
                produced = outputs(job.command, run_dir) | produced  # the first producer wins
    print("\nlongest commands (wall seconds, with the others running beside them):")
    for seconds, command in sorted(ran, reverse=True)[:12]:
        print(f"{seconds:>6.0f}  {command[:150]}")
    print(f"{len(rows)} commands, {failures} failed or unclassified; {len(ran)} ran on {args.workers} workers; outputs under {tmp}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
