# Two commands on a fresh machine with python3 and make: `make demo`, `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
EXTRAS := dev,otel,openai,anthropic,mcp
export PIP_CONSTRAINT := $(CURDIR)/requirements/constraints.txt
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: demo test lint typecheck pytest bench lock clean

$(STAMP): pyproject.toml requirements/constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q -e '.[$(EXTRAS)]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/ptcflow demo

test: $(STAMP) lint typecheck pytest

lint: $(STAMP)
	$(BIN)/ruff check src tests bench examples
	$(BIN)/ruff format --check src tests bench examples

typecheck: $(STAMP)
	$(BIN)/mypy src tests bench examples

pytest: $(STAMP)
	$(BIN)/pytest

bench: $(STAMP)
	for f in bench/*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

lock:
	rm -rf /tmp/ptcflow-lock && $(PYTHON) -m venv /tmp/ptcflow-lock
	PIP_CONSTRAINT= /tmp/ptcflow-lock/bin/pip install -q -e '.[$(EXTRAS)]'
	/tmp/ptcflow-lock/bin/pip freeze --exclude-editable > requirements/constraints.txt

clean:
	rm -rf $(VENV)
