# Every target bootstraps itself: a fresh machine needs only Python 3.11 + pip.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
# Every dependency comes from a lock with hashes (requirements/, `make lock`); the project itself goes
# in after them without resolving anything, built by the locked setuptools.
RUN_LOCK  := requirements/run.lock
DEV_LOCK  := requirements/dev.lock
RUN_STAMP := $(VENV)/.installed-run
DEV_STAMP := $(VENV)/.installed-dev
INSTALL   := $(BIN)/python -m pip install -q
PYTEST_ARGS ?=
# e.g. make run RUN_ARGS='--store redis://127.0.0.1:6379/0 --session-replicas 2'
RUN_ARGS ?=

.PHONY: venv test test-slow test-lowest fuzz lint run bench bench-load simulate protos protos-check \
	lock lock-upgrade lock-check clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# `make run`: the runtime dependencies only (no test or dev tools).
$(RUN_STAMP): $(RUN_LOCK) pyproject.toml | $(BIN)/python
	$(INSTALL) --require-hashes -r $(RUN_LOCK)
	$(INSTALL) --no-deps --no-build-isolation -e .
	touch $@

# Everything else: runtime + test + dev (a superset of run.lock at the same pins).
$(DEV_STAMP): $(DEV_LOCK) pyproject.toml | $(BIN)/python
	$(INSTALL) --require-hashes -r $(DEV_LOCK)
	$(INSTALL) --no-deps --no-build-isolation -e .
	touch $@

venv: $(DEV_STAMP)

test: $(DEV_STAMP)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# Long fault tests (soak: SOAK_SECONDS, default 1800) excluded from `make test`.
test-slow: $(DEV_STAMP)
	$(BIN)/python -m pytest -m slow $(PYTEST_ARGS)

# Coverage-guided fuzzing (atheris) of the parsers of untrusted input, FUZZ_SECONDS per target, one
# after another; stops at the first crash (written to artifacts/fuzz/<target>/). The corpus grows in
# artifacts/fuzz/corpus/<target>, so the next run starts where this one ended.
FUZZ_SECONDS ?= 300
FUZZ_TARGETS ?= gateway engine session
fuzz: $(DEV_STAMP)
	@for target in $(FUZZ_TARGETS); do \
		mkdir -p artifacts/fuzz/corpus/$$target && \
		$(BIN)/python -m tests.fuzz $$target -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
			artifacts/fuzz/corpus/$$target || exit 1; \
	done

lint: $(DEV_STAMP)
	$(BIN)/ruff check ninetynine tests bench
	$(BIN)/ruff format --check ninetynine tests bench
	$(BIN)/mypy

run: $(RUN_STAMP)
	$(BIN)/ninety-nine serve $(RUN_ARGS)

simulate: $(RUN_STAMP)
	$(BIN)/ninety-nine simulate --mode kr-product --players 4 --games 2000 --seed 7

bench: $(DEV_STAMP)
	$(BIN)/python -m bench

# Load ladder through the real stack (engine, session, gateway): capacity table and curve.
bench-load: $(DEV_STAMP)
	$(BIN)/python -m bench.load.ladder

protos: $(DEV_STAMP)
	$(BIN)/python scripts/gen_protos.py
	$(BIN)/python scripts/gen_schema.py

protos-check: $(DEV_STAMP)
	$(BIN)/python scripts/gen_protos.py --check
	$(BIN)/python scripts/gen_schema.py --check

# The tests against the lowest versions pyproject.toml allows, in a second venv (.venv-lowest).
test-lowest:
	bash scripts/test_lowest.sh $(PYTEST_ARGS)

# Re-resolve requirements/*.lock after a change to pyproject.toml (keeps every pin it can);
# lock-upgrade moves every pin to the newest allowed release. Both need the network.
lock: $(DEV_STAMP)
	$(BIN)/python scripts/lock.py

lock-upgrade: $(DEV_STAMP)
	$(BIN)/python scripts/lock.py --upgrade

lock-check: $(DEV_STAMP)
	$(BIN)/python scripts/lock.py --check

clean:
	rm -rf $(VENV) $(VENV)-lowest .pytest_cache .mypy_cache .ruff_cache .hypothesis
