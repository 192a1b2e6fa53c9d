# The two set-up commands of the README are `make demo` and `make test`; both work on a fresh
# machine that has only python3: the first target that needs the environment builds it from the
# lock (uv is bootstrapped into .bootstrap/ with pip, then `uv sync --frozen`).
PYTHON ?= python3
UV_VERSION := 0.13.9
BOOT := .bootstrap
UV := $(BOOT)/bin/uv
VENV := .venv
BIN := $(VENV)/bin
export UV_PROJECT_ENVIRONMENT := $(abspath $(VENV))

.PHONY: all env lint typecheck contracts unit test demo bench bench-tiny events-doc state-doc clean

all: test

$(UV):
	$(PYTHON) -m venv $(BOOT)
	$(BOOT)/bin/pip install --quiet --disable-pip-version-check "uv==$(UV_VERSION)"

$(VENV)/.synced: uv.lock pyproject.toml | $(UV)
	$(UV) sync --frozen --quiet
	touch $@

env: $(VENV)/.synced

lint: env
	$(BIN)/ruff check pycm tui web tests bench
	$(BIN)/ruff format --check pycm tui web tests bench

typecheck: env
	$(BIN)/mypy

contracts: env
	$(BIN)/lint-imports --no-cache

unit: env
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# `make test`: lint, type check, import contracts, then the whole suite (benchmarks at tiny size
# are part of the suite: tests/bench keeps them working).
test: lint typecheck contracts unit

demo: env
	$(BIN)/pycm demo

bench: env
	$(BIN)/python -m bench all

events-doc: env
	$(BIN)/pycm trace kinds --markdown > docs/events.md

state-doc: env
	$(BIN)/pycm trace schema > docs/state.md

clean:
	rm -rf $(VENV) $(BOOT) .mypy_cache .ruff_cache
