# Set-up and test commands for azure_maintenance.scheduled_events.
# The work is done by the scripts in tests/tooling/, so CI (.ci/run runs
# `make test`) and people run exactly the same steps. Every target first makes
# sure the machine is bootstrapped (Debian packages, .venv, ansible-test's pip
# bootstrap), which is quick when nothing changed.

SHELL := /bin/bash
TOOLING := tests/tooling
VENV_BIN := $(CURDIR)/.venv/bin
# Integration targets to run (all when empty): make integration TARGETS="module_query lookup_events"
TARGETS ?=
# Arguments for the foreground simulator: make simulator SIMULATOR_ARGS="--help"
SIMULATOR_ARGS ?=
# Compatibility-matrix jobs to run (all when empty): make matrix MATRIX_JOBS="2.16 2.18:plugins"
MATRIX_JOBS ?=

.DEFAULT_GOAL := help
.PHONY: help bootstrap test units simulator-tests fault-tests sanity integration system-tests fleet-tests build lint docs matrix benchmark simulator demo clean ci-fresh load-test cpu-profile

help: ## list the targets
	@echo "Usage: make TARGET"
	@awk 'BEGIN {FS = ":.*## "} /^[a-z][a-z-]*:.*## / {printf "  %-16s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

bootstrap: ## install missing Debian packages, create/update .venv, prepare ansible-test
	bash $(TOOLING)/bootstrap.sh

# make test and cpu-profile: the bootstrap also makes the venvs the stages
# would make for themselves, while one core is idle (tests/tooling/bootstrap.sh).
test cpu-profile: export BOOTSTRAP_STAGE_VENVS = yes
test: bootstrap ## run every stage, four at a time (MAKE_TEST_SLOTS=n): units, simulator, system, rolling and e2e tests, sanity, integration, build, lint, docs, ansible-core 2.16-2.18
	bash $(TOOLING)/run-all.sh

ci-fresh: ## run .ci/run on a fresh clone of HEAD with an empty HOME and TMPDIR, as a new machine would
	bash $(TOOLING)/ci-fresh.sh

load-test: bootstrap ## the unit, simulator, system, rolling and e2e tests 3 times in a row while every core is kept busy (ROUNDS=n)
	bash $(TOOLING)/run-under-load.sh

cpu-profile: bootstrap ## make test with process accounting on (root): the CPU of each stage by kind of work
	bash $(TOOLING)/cpu-profile.sh

units: bootstrap ## unit tests (pytest tests/unit)
	bash $(TOOLING)/run-units.sh

simulator-tests: bootstrap ## IMDS simulator tests (pytest tests/simulator/tests)
	bash $(TOOLING)/run-simulator-tests.sh

sanity: bootstrap ## ansible-test sanity on a staged copy of the collection
	bash $(TOOLING)/run-sanity.sh

integration: bootstrap ## ansible-test integration, local; TARGETS="a b" picks targets
	bash $(TOOLING)/run-integration.sh $(TARGETS)

fault-tests: bootstrap ## fault matrix against real processes (pytest tests/faults)
	bash $(TOOLING)/run-fault-tests.sh

system-tests: bootstrap ## service daemon, fault matrix, EDA/ansible-rulebook, ansible-builder; rolling scenarios; then HAProxy e2e, ansible-runner
	bash $(TOOLING)/run-system-tests.sh
	bash $(TOOLING)/run-rolling-system-tests.sh
	bash $(TOOLING)/run-e2e-tests.sh

fleet-tests: bootstrap ## fleet-plane modules against the simulator's ARM facade (pytest tests/fleet)
	bash $(TOOLING)/run-fleet-tests.sh

build: bootstrap ## build and install the tarball, then ansible-doc every plugin from it
	bash $(TOOLING)/build-check.sh

lint: bootstrap ## ansible-lint --profile production on a staged copy (settings: .ansible-lint)
	bash $(TOOLING)/run-lint.sh

docs: bootstrap ## build the docs site (antsibull-docs + Sphinx, own venv) into build/docs/html and check it
	bash $(TOOLING)/run-docs.sh

matrix: bootstrap ## compatibility matrix: one venv per ansible-core minor 2.16-2.19; MATRIX_JOBS="2.16 2.17:plugins" picks jobs
	bash $(TOOLING)/run-matrix.sh $(MATRIX_JOBS)

benchmark: bootstrap ## run every tests/benchmarks/bench_*.py
	bash $(TOOLING)/run-benchmarks.sh

simulator: bootstrap ## run the IMDS simulator in the foreground (SIMULATOR_ARGS=...)
	@test -x tests/simulator/imds-simulator || { echo "ERROR: tests/simulator/imds-simulator is missing or not executable." >&2; exit 1; }
	PATH="$(VENV_BIN):$$PATH" tests/simulator/imds-simulator $(SIMULATOR_ARGS)

demo: bootstrap ## run the demo (tests/tooling/demo)
	@test -x $(TOOLING)/demo || { echo "ERROR: $(TOOLING)/demo is missing or not executable." >&2; exit 1; }
	PATH="$(VENV_BIN):$$PATH" $(TOOLING)/demo

clean: ## remove build/ (staged collection, tarballs)
	rm -rf build
