# hubgrid developer entry points. All machine setup lives in scripts/.
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c

PYTEST_ARGS ?=

.PHONY: install run test test-fast images

install:
	bash scripts/install.sh

run: install
	bash scripts/run.sh

# Session images, the data-science one included (start-docker.sh is a no-op
# when the engine already runs).
images: install
	HOSTS="$$(bash scripts/start-docker.sh | tail -n1)"; \
	bash scripts/build-images.sh --all --hosts "$$HOSTS"

# Every service the tests use, each script idempotent and printing what the
# tests need as its last stdout line: PostgreSQL (URL), two Docker engines
# (comma-separated docker host URLs) with the base session image on each,
# and a single-node Slurm cluster (partition); Debian's chromium for the
# UI tests. Then the JupyterLab extension's
# jest tests and pytest: the tests that run real parts and the others as two
# processes at once (scripts/pytest-both.sh; HUBGRID_TEST_SERIAL=1 for one).
test:
	bash scripts/install.sh --with-postgres --with-chromium
	HUBGRID_TEST_POSTGRES_URL="$$(bash scripts/start-postgres.sh | tail -n1)"; \
	HUBGRID_TEST_DOCKER_HOSTS="$$(bash scripts/start-docker.sh --engines 2 | tail -n1)"; \
	HUBGRID_TEST_DOCKER_IMAGE="$$(bash scripts/build-images.sh --hosts "$$HUBGRID_TEST_DOCKER_HOSTS" | tail -n1)"; \
	HUBGRID_TEST_SLURM_PARTITION="$$(bash scripts/start-slurm.sh | tail -n1)"; \
	export HUBGRID_TEST_POSTGRES_URL HUBGRID_TEST_DOCKER_HOSTS HUBGRID_TEST_DOCKER_IMAGE HUBGRID_TEST_SLURM_PARTITION; \
	(cd labextension && npm test); \
	PATH="$(CURDIR)/node_modules/.bin:$$PATH" bash scripts/pytest-both.sh $(PYTEST_ARGS)

# The developer's quick loop: the tests without real parts (pure rules, the
# service's app, SQLite; no hub, engine, Slurm or browser, and PostgreSQL's
# half skipped unless HUBGRID_TEST_POSTGRES_URL is set). CI runs everything.
test-fast:
	.venv/bin/python -m pytest -q -m "not real" -p no:cacheprovider $(PYTEST_ARGS)
