# Two commands on a fresh machine with python3 and make: `make demo`, `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
EXTRAS := dev,otel,openai,anthropic,mcp,service,temporal,agui
export PIP_CONSTRAINT := $(CURDIR)/requirements/constraints.txt
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: demo test lint typecheck pytest bench lock clean browser

$(STAMP): pyproject.toml requirements/constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q -e '.[$(EXTRAS)]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/ptcflow demo

test: $(STAMP) browser lint typecheck pytest

# Headless Chromium for the trace viewer's browser tests: Debian's package, installed when
# missing and running as root (Playwright's own browser download does not work here).
# Idempotent; without it the browser tests skip, and pytest's -rs summary says why.
browser:
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	  { apt-get install -y -q --no-install-recommends chromium >/dev/null 2>&1 || \
	    { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q --no-install-recommends chromium >/dev/null 2>&1; }; }; } || \
	  echo "chromium could not be installed: the browser tests will skip"

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
