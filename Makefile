# Set-up and entry points. `make train` and `make test` work on a fresh machine: they create
# .venv if missing and install the CPU stack (torch pinned to its CPU build first).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
TORCH_CPU := torch==2.13.0
export TMPDIR := $(CURDIR)/.tmp
export WANDB_MODE ?= offline
export WANDB_SILENT ?= true

.PHONY: setup train test bench sim clean

$(STAMP): pyproject.toml
	@mkdir -p $(TMPDIR)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q $(TORCH_CPU)
	$(BIN)/pip install -q -e '.[test]' $(TORCH_CPU)
	touch $(STAMP)

setup: $(STAMP)

train: $(STAMP)
	$(BIN)/python train.py $(ARGS)

test: $(STAMP)
	$(BIN)/python -m pytest -q $(ARGS)

bench: $(STAMP)
	$(BIN)/python -m benchmarks.rollout_efficiency $(ARGS)

clean:
	rm -rf $(VENV) $(TMPDIR) outputs
