# The README's quick start: `make demo` and `make test`. Both create .venv and install first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-test
# Two pytest-xdist workers: the Spark tests on one (the run's one local session), the rest on the
# other (tests/conftest.py).
TEST_WORKERS ?= 2

.PHONY: demo test lint bench clean

$(STAMP): pyproject.toml
	@$(PYTHON) scripts/check_env.py --java
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test,spark]"
	@touch $(STAMP)

demo: $(STAMP)
	$(BIN)/paimon-index demo

test: $(STAMP)
	$(BIN)/ruff check src tests benchmarks scripts
	$(BIN)/mypy
	$(BIN)/pytest -n $(TEST_WORKERS)

bench: $(STAMP)
	$(BIN)/python benchmarks/file_index.py

clean:
	rm -rf $(VENV) demo-warehouse .pytest_cache .ruff_cache .hypothesis
