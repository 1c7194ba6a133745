# hubgrid developer entry points. All machine setup lives in scripts/.
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c

PYTEST_ARGS ?=

.PHONY: install run test

install:
	bash scripts/install.sh

run: install
	bash scripts/run.sh

test:
	bash scripts/install.sh --with-postgres
	HUBGRID_TEST_POSTGRES_URL="$$(bash scripts/start-postgres.sh | tail -n1)"; \
	export HUBGRID_TEST_POSTGRES_URL; \
	PATH="$(CURDIR)/node_modules/.bin:$$PATH" .venv/bin/python -m pytest -ra $(PYTEST_ARGS)
