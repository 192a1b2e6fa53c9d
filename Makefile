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

.PHONY: all env test-deps lint typecheck contracts unit test demo bench bench-tiny events-doc state-doc image clean

all: test

$(UV):
	$(PYTHON) -m venv $(BOOT)
	$(BOOT)/bin/pip install --quiet --disable-pip-version-check "uv==$(UV_VERSION)"

$(VENV)/.synced: uv.lock pyproject.toml | $(UV)
	$(UV) sync --frozen --quiet --compile-bytecode
	touch $@

env: $(VENV)/.synced

lint: env
	$(BIN)/ruff check pycm tui web tests bench examples
	$(BIN)/ruff format --check pycm tui web tests bench examples

typecheck: env
	$(BIN)/mypy

contracts: env
	$(BIN)/lint-imports --no-cache

# What the tests need from outside the lock (chromium and its fonts, prometheus/promtool, a
# project-local kubectl in tools/): installed with apt-get on first use, with one line saying so;
# where that cannot be done (not root, no apt-get), one message naming the command, exit 2,
# before any test runs. `make demo` needs none of it.
test-deps:
	@bash tests/system-deps.sh

# The suite runs on $(TEST_WORKERS) pytest-xdist workers (tests/conftest.py schedules the long
# end-to-end tests first and keeps the leader-election ones off each other's cores);
# `make unit PYTEST_ARGS="tests/cache -n0"` runs one folder serially.
# The suite starts some 300 Python processes (managers, emulators, CLIs). Without cached
# bytecode each one compiles every module it imports, which doubles its start-up CPU (0.75 s →
# 1.5 s for `pycm run`): where PYTHONDONTWRITEBYTECODE is set, nothing is ever cached. So the
# suite runs with it unset, and the project's own sources are compiled once up front (the
# lock's packages are compiled by `uv sync --compile-bytecode`). Test modules and conftests are
# not: pytest imports them through its assertion rewriting, whose cache tests/warm_rewrite.py
# fills on every core before the workers start (each worker would otherwise rewrite them all).
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); echo $$((n * 2 + 1)))
unit: env test-deps
	@PYTHONDONTWRITEBYTECODE= $(BIN)/python -m compileall -q -j 0 \
		-x '/(test_[^/]*|[^/]*_test|conftest|leakcheck)\.py$$' pycm tui web bench examples tests
	@PYTHONDONTWRITEBYTECODE= $(BIN)/python -m tests.warm_rewrite tests
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadgroup $(PYTEST_ARGS)

# `make test`: lint and import contracts, then the whole suite (benchmarks at tiny size are part
# of the suite: tests/bench keeps them working) with the type check running beside it: mypy is
# ~20 s of one core, and pytest's workers spend much of their time waiting on processes they
# started. Its output is held back and printed after pytest's, under a header; the target fails
# if either fails (`make typecheck` alone still runs it in the foreground).
test: test-deps lint contracts
	@log=$$(mktemp); \
	$(BIN)/mypy >"$$log" 2>&1 & typing=$$!; \
	$(MAKE) --no-print-directory unit; suite=$$?; \
	wait $$typing; typed=$$?; \
	echo "--- mypy (run beside the suite): exit $$typed"; cat "$$log"; rm -f "$$log"; \
	test $$suite -eq 0 && test $$typed -eq 0

demo: env
	$(BIN)/pycm demo

bench: env
	$(BIN)/python -m bench all

events-doc: env
	$(BIN)/pycm trace kinds --markdown > docs/events.md

state-doc: env
	$(BIN)/pycm trace schema > docs/state.md

# `make image`: the container image from deploy/Containerfile, with docker or else podman
# (CONTAINER_ENGINE=... to choose); tagged localhost/pycm:<version>, the tag deploy/kubernetes
# names. IMAGE=... to tag it otherwise.
VERSION := $(shell sed -n 's/^version = "\(.*\)"$$/\1/p' pyproject.toml)
IMAGE ?= localhost/pycm:$(VERSION)
CONTAINER_ENGINE ?= $(shell command -v docker 2>/dev/null || command -v podman 2>/dev/null)

image:
	@if [ -z "$(CONTAINER_ENGINE)" ]; then \
		echo "make image: neither docker nor podman is installed; install one, or build" \
			"deploy/Containerfile with another OCI image builder" >&2; \
		exit 1; \
	fi
	@echo "make image: $(notdir $(CONTAINER_ENGINE)) build -t $(IMAGE) -f deploy/Containerfile ."
	$(CONTAINER_ENGINE) build -t $(IMAGE) -f deploy/Containerfile .

clean:
	rm -rf $(VENV) $(BOOT) .mypy_cache .ruff_cache
