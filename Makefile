# Every target bootstraps itself: a fresh machine needs only Python 3.11 + pip.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PYTEST_ARGS ?=
# e.g. make run RUN_ARGS='--store redis://127.0.0.1:6379/0 --session-replicas 2'
RUN_ARGS ?=

.PHONY: venv test test-slow fuzz lint run bench bench-load simulate protos protos-check clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test,dev]'
	touch $(STAMP)

venv: $(STAMP)

test: $(STAMP)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# Long fault tests (soak: SOAK_SECONDS, default 1800) excluded from `make test`.
test-slow: $(STAMP)
	$(BIN)/python -m pytest -m slow $(PYTEST_ARGS)

# Coverage-guided fuzzing (atheris) of the parsers of untrusted input, FUZZ_SECONDS per target, one
# after another; stops at the first crash (written to artifacts/fuzz/<target>/). The corpus grows in
# artifacts/fuzz/corpus/<target>, so the next run starts where this one ended.
FUZZ_SECONDS ?= 300
FUZZ_TARGETS ?= gateway engine session
fuzz: $(STAMP)
	@for target in $(FUZZ_TARGETS); do \
		mkdir -p artifacts/fuzz/corpus/$$target && \
		$(BIN)/python -m tests.fuzz $$target -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
			artifacts/fuzz/corpus/$$target || exit 1; \
	done

lint: $(STAMP)
	$(BIN)/ruff check services tests bench
	$(BIN)/ruff format --check services tests bench
	$(BIN)/mypy

run: $(STAMP)
	$(BIN)/ninety-nine serve $(RUN_ARGS)

simulate: $(STAMP)
	$(BIN)/ninety-nine simulate --mode kr-product --players 4 --games 2000 --seed 7

bench: $(STAMP)
	$(BIN)/python -m bench

# Load ladder through the real stack (engine, session, gateway): capacity table and curve.
bench-load: $(STAMP)
	$(BIN)/python -m bench.load.ladder

protos: $(STAMP)
	$(BIN)/python scripts/gen_protos.py

protos-check: $(STAMP)
	$(BIN)/python scripts/gen_protos.py --check

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
