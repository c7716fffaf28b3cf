# Composition Lens — everything a newcomer needs is `make run` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CHROMIUM ?= /usr/bin/chromium
NPM ?= npm
# The test tools from npm, pinned by package-lock.json, in node_modules/: axe-core (the
# accessibility checks) and the MCP conformance suite (tests/web/mcp/test_conformance.py).
AXE_STAMP := node_modules/.installed
HOST ?= 127.0.0.1
PORT ?= 8000
# pytest-xdist workers; the suite is I/O-light, so one per core.
WORKERS ?= 2

export DEBUG ?= 1

.PHONY: run serve test test-fast bench bench-http bench-http-tools bench-engines bench-scale lint format chromium axe screenshots clean

# PyICU (pyproject.toml) compiles against the system's ICU: Debian's libicu-dev, found
# through pkg-config, and a C++ compiler. Installed from Debian when missing.
$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "Python 3.11 is required ($(PYTHON) not found)"; exit 1; }
	@if ! pkg-config --exists icu-uc icu-i18n 2>/dev/null || ! command -v g++ >/dev/null; then \
		echo "Installing ICU's headers (libicu-dev), pkg-config and g++ from Debian for PyICU"; \
		if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq libicu-dev pkg-config g++ >/dev/null; \
		else sudo apt-get update -qq && sudo apt-get install -y -qq libicu-dev pkg-config g++ >/dev/null; fi; \
	fi
	@pkg-config --exists icu-uc icu-i18n && command -v g++ >/dev/null || { \
		echo "PyICU needs ICU's headers, pkg-config and a C++ compiler: apt-get install libicu-dev pkg-config g++"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

# The production server (Granian, lens/serving/server.py) in a development configuration: DEBUG
# on, one process that reloads on code changes, static files from the source tree. Webhooks
# may call a receiver on this machine over plain http (the SSRF guard is off): for trying
# them out here only, never under `serve`.
run: export WEBHOOKS_ALLOW_HTTP = 1
run: export WEBHOOKS_ALLOW_PRIVATE = 1
run: $(STAMP)
	$(BIN)/python manage.py migrate --no-input -v0
	HOST=$(HOST) PORT=$(PORT) $(BIN)/python manage.py seed_demo
	@echo "Serving on http://$(HOST):$(PORT)/ (Ctrl-C to stop; code changes reload)"
	$(BIN)/python manage.py worker --reload -v0 & trap 'kill $$! 2>/dev/null' EXIT; \
	HOST=$(HOST) PORT=$(PORT) $(BIN)/python -m lens.serving.server --dev

# Production: Granian (lens/serving/server.py) with DEBUG off; static files hashed,
# compressed and served by WhiteNoise. On PostgreSQL each process keeps a connection pool
# (DB_POOL=0 turns it off). Needs SECRET_KEY and ALLOWED_HOSTS (docs/operations-and-security.md).
serve: export DEBUG = 0
serve: export DB_POOL ?= 1
serve: $(STAMP)
	@test -n "$$SECRET_KEY" || { echo "make serve: set SECRET_KEY (e.g. python3 -c 'import secrets; print(secrets.token_urlsafe(50))')"; exit 1; }
	@test -n "$$ALLOWED_HOSTS" || { echo "make serve: set ALLOWED_HOSTS (comma-separated host names this server answers to)"; exit 1; }
	$(BIN)/python manage.py migrate --no-input -v1
	$(BIN)/python manage.py collectstatic --no-input -v0
	$(BIN)/python manage.py worker -v0 & trap 'kill $$! 2>/dev/null' EXIT; \
	HOST=$(HOST) PORT=$(PORT) $(BIN)/python -m lens.serving.server

chromium:
	@if [ ! -x "$(CHROMIUM)" ]; then \
		echo "Installing Chromium from Debian for the browser tests"; \
		if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium >/dev/null; \
		else sudo apt-get update -qq && sudo apt-get install -y -qq chromium >/dev/null; fi; \
	fi
	@"$(CHROMIUM)" --version

$(AXE_STAMP): package.json package-lock.json
	@if ! command -v $(NPM) >/dev/null; then \
		echo "Installing Node.js and npm from Debian for the accessibility tests"; \
		if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq nodejs npm >/dev/null; \
		else sudo apt-get update -qq && sudo apt-get install -y -qq nodejs npm >/dev/null; fi; \
	fi
	$(NPM) ci --no-audit --no-fund --loglevel=error
	touch $(AXE_STAMP)

axe: $(AXE_STAMP)

# lint first (ruff, then mypy), then the migrations check and the whole suite.
test: lint chromium axe
	$(BIN)/python manage.py makemigrations --check --dry-run -v0
	CHROMIUM=$(CHROMIUM) $(BIN)/pytest -n $(WORKERS) $(PYTEST_ARGS)

test-fast: $(STAMP)
	$(BIN)/pytest -n $(WORKERS) -m "not browser" $(PYTEST_ARGS)

# In-process figures first, then the HTTP figures against etcd (bench-http), tracing's
# cost (composition endpoint with OpenTelemetry on against off) and the audit append's
# (memory_save and a key/value put with the event against without), and one team's
# costly calls beside another team's cheap ones (bench/fairness.py).
bench: $(STAMP) bench-http-tools
	$(BIN)/python -m bench
	$(BIN)/python -m bench.webhook_outage
	$(BIN)/python -m bench.servers
	$(BIN)/python -m bench.http
	$(BIN)/python -m bench.compose_http
	$(BIN)/python -m bench.tracing_http
	$(BIN)/python -m bench.audit_http
	$(BIN)/python -m bench.fairness

# The production server before (gunicorn) and after (Granian) the change, then make serve
# under load on loopback, SQLite then PostgreSQL (when it answers at BENCH_PG_URL), side
# by side with etcd's HTTP gateway and measured by the same client; wrk for throughput.
# etcd and wrk come from Debian when missing. Then the big agent's composition, delivery
# and lens page with its composition kept since the last change and composed every time.
bench-http: $(STAMP) bench-http-tools
	$(BIN)/python -m bench.servers
	$(BIN)/python -m bench.http
	$(BIN)/python -m bench.compose_http
	$(BIN)/python -m bench.tracing_http

# The webhook sender's task engine against the alternative (docs/performance.md#task-engine):
# django-tasks-db on SQLite and PostgreSQL, procrastinate on PostgreSQL (when it answers
# at BENCH_PG_URL), each on a throwaway database, in one run of about 3½ minutes.
bench-engines: $(STAMP)
	$(BIN)/python -m bench.task_engines

# Cost curves as the data grows (docs/performance.md#cost-curves-as-the-data-grows): one
# team grown 1×, 10× and 100× (agents, one agent's memories and deliveries, the audit
# log), each operation timed at each size on SQLite then PostgreSQL (when it answers at
# BENCH_PG_URL), each in a scratch database; writes docs/scale/ (data.json, table.md, one
# SVG per operation). 12 to 19 minutes here; not part of CI.
bench-scale: $(STAMP)
	$(BIN)/python -m bench.scale

bench-http-tools:
	@if ! command -v etcd >/dev/null || ! command -v wrk >/dev/null; then \
		echo "Installing etcd (etcd-server) and wrk from Debian for the HTTP benchmark"; \
		if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq etcd-server wrk >/dev/null; \
		else sudo apt-get update -qq && sudo apt-get install -y -qq etcd-server wrk >/dev/null; fi; \
	fi

# Every page at 390 and 1440 px, light and dark, on the demo data plus a big agent,
# as PNGs under var/screenshots/ (a scratch SQLite database; nothing else is touched).
screenshots: $(STAMP) chromium
	CHROMIUM=$(CHROMIUM) $(BIN)/python -m tools.screenshots

# mypy loads lens.settings through the django-stubs plugin: DEBUG=1 (exported above)
# or a SECRET_KEY must be set.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

format: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

clean:
	rm -rf $(VENV) staticfiles .mypy_cache node_modules
