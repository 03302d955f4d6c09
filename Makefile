# heart — the two commands:
#   make run    set up .venv, run the workflow on the embedded default config, write results/report.html
#   make test   set up .venv and run the test suite, every tier (what CI runs)
#   make test-fast   the quick loop while working: the unit and dag tiers on the project's own fixtures
#   make lint        ruff and snakefmt --check (make test and make test-fast run it first)
#                    (no Snakemake run, no model, not the real data of ../shared)
#   make bundle      this config's run exported as one folder, the data release (results/bundle/, with its README)
#   make paper ARTIFACTS=<folder>  every figure and table and the report from a bundle: no model call, no key
#                    (make check-bundle ARTIFACTS=<folder> first: every file and cross-reference, what it holds)
#   make preview     what a config's run would call and cost, per stage and model (no key needed, no call made)
#   make annotate    make the human tasks and serve the annotation pages (docs/human-data.md)
#   make clean-results  remove everything the workflow made (results/, logs/, benchmarks/), keeping the
#                    response cache and the human-data store
#   make rehearsal   the paper's whole run against the provider simulator, in a scratch clone of HEAD
#                    (docs/reproducing-the-paper.md; a benchmark that prints its figures, ~30 min)
# Variables: ESCONV=/path/to/ESConv.json (use a local copy instead of downloading),
#            RELEASE=/path/to/folder (a local copy of the paper's released contexts),
#            CONFIG=config/paper.yaml (another complete config instead of the embedded default),
#            CORES=2, PYTHON=python3.11, SNAKEMAKE_ARGS="...", PYTEST_ARGS="...",
#            PORT=8765 (make annotate: the store and taxonomy are the config's),
#            ANNOTATE_ARGS="--proxy 127.0.0.2 --public-url https://..." (make annotate: more serve options),
#            DATA=../shared/data (make rehearsal: holds esconv/ESConv.json and heart-release/),
#            ARTIFACTS=<folder> (make paper: the bundle),
#            REHEARSAL_DIR=/tmp/heart-rehearsal, REHEARSAL_ARGS="--items 20" (its options: --help).
SHELL := /bin/bash
# The Python the venv is built on: the distribution's /usr/bin/python3.11 where it can make a venv, else the first
# python3.11 on PATH that can, else python3's; where none can, the first python3.11 or python3 on PATH (its venv step
# then says what to install, e.g. Debian's python3.11-venv). A distribution's build is profile-guided and links the
# interpreter statically; pyenv's default build (no --enable-optimizations, a shared libpython) is slower, and the
# test suite, hundreds of short Python processes, spent ~13 % more CPU on pyenv's 3.11.7 than on Debian's 3.11.2
# (docs/benchmarks.md).
PYTHON ?= $(shell for p in /usr/bin/python3.11 "$$(command -v python3.11)" "$$(command -v python3)"; do \
  [ -x "$$p" ] && "$$p" -c 'import ensurepip, venv' 2>/dev/null && { echo "$$p"; exit; }; done; \
  command -v python3.11 || command -v python3)
VENV ?= .venv
CORES ?= 2
ESCONV ?=
RELEASE ?=
CONFIG ?=
SNAKEMAKE_ARGS ?=
PYTEST_ARGS ?=
# the stamp names the pins and interpreter: .venv linked to another store (other pins, another PYTHON) lacks it
STAMP = $(VENV)/.heart-setup-$(PINS_KEY)
# The venv is built once per set of pins (envs/requirements.txt, envs/constraints.txt) and interpreter in
# VENV_STORE and linked as .venv: a fresh clone (CI's) links it in a second instead of installing ~150 packages
# (~75 s). Change a pin or PYTHON and another store is built; delete a store folder to rebuild it; VENV_STORE=
# (empty) builds .venv in place.
PYTHON_ID := $(shell "$(PYTHON)" -c 'import os, sys; print(os.path.realpath(sys.executable), sys.version)' 2>/dev/null)
PINS_KEY := $(shell { cat envs/requirements.txt envs/constraints.txt; echo "$(PYTHON_ID)"; } 2>/dev/null \
  | sha256sum | cut -c1-16)
VENV_STORE ?= $(HOME)/.cache/heart/venvs/py311-$(PINS_KEY)
# llama-cpp-python is built from source once, for a portable x86-64 baseline
# (AVX2/FMA, not -march=native: a wheel built natively on one CPU dies with SIGILL
# on another), and kept in this wheelhouse so later installs and CI reuse it.
LLAMA_CPP := llama-cpp-python==$(shell sed -n 's/^llama-cpp-python\[server\]==//p' envs/requirements.txt)
WHEELHOUSE ?= $(HOME)/.cache/heart/wheels/portable-v1
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF

PORT ?= 8765
ANNOTATE_ARGS ?=
# the browser tests drive Debian's chromium through its chromedriver; the proxy tests run Debian's nginx
# (tests/annotation/test_annotation_proxy.py, workflow/resources/annotation/nginx.conf)
# (the tests run their own nginx; the one the package may start on port 80 is stopped after installing it)
BROWSER_PACKAGES := chromium chromium-driver nginx

.PHONY: setup venv-build compile run preview bundle paper check-bundle test test-fast lint browser annotate rehearsal clean-results

setup: $(STAMP)

$(STAMP): envs/requirements.txt envs/constraints.txt
	@"$(PYTHON)" -c 'import sys; v = sys.version_info[:2]; sys.exit(0 if v == (3, 11) else "heart needs Python 3.11, found %d.%d: make PYTHON=/path/to/python3.11 ..." % v)'
	@if [ -z "$(VENV_STORE)" ]; then $(MAKE) --no-print-directory venv-build VENV_DIR="$(VENV)"; \
	else mkdir -p "$$(dirname "$(VENV_STORE)")"; \
	  flock "$(VENV_STORE).lock" sh -c '[ -f "$(VENV_STORE)/.heart-installed" ] || $(MAKE) --no-print-directory venv-build VENV_DIR="$(VENV_STORE)"' || exit 1; \
	  if [ "$$(readlink $(VENV))" != "$(VENV_STORE)" ]; then rm -rf $(VENV) && ln -s "$(VENV_STORE)" $(VENV) \
	    && echo "$(VENV) -> $(VENV_STORE) (the venv of these pins)"; fi; fi
	touch $@

# (internal) a venv of the pins in VENV_DIR; its stamp is written last, so a half-built one is built again
venv-build:
	rm -rf "$(VENV_DIR)"
	"$(PYTHON)" -m venv "$(VENV_DIR)"
	"$(VENV_DIR)/bin/python" -m pip install --quiet --disable-pip-version-check pip==26.3
	@ls $(WHEELHOUSE)/llama_cpp_python-*.whl >/dev/null 2>&1 || { \
	  echo "building $(LLAMA_CPP) from source (about 5-15 min on 2 cores, once; kept in $(WHEELHOUSE))"; \
	  CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" "$(VENV_DIR)/bin/python" -m pip wheel --quiet --no-deps --no-cache-dir \
	    --no-binary llama-cpp-python -w $(WHEELHOUSE) "$(LLAMA_CPP)"; }
	"$(VENV_DIR)/bin/python" -m pip install --quiet --no-deps --no-index --find-links $(WHEELHOUSE) "$(LLAMA_CPP)"
	"$(VENV_DIR)/bin/python" -m pip install --quiet -r envs/requirements.txt -c envs/constraints.txt
	touch "$(VENV_DIR)/.heart-installed"

RUN_ARGS = $(if $(CONFIG),--configfile $(CONFIG)) $(if $(ESCONV)$(RELEASE),--config) \
  $(if $(ESCONV),'esconv={local_copy: $(ESCONV)}') $(if $(RELEASE),'release={local_copy: $(RELEASE)}')

run: setup compile
	$(VENV)/bin/snakemake --cores $(CORES) $(RUN_ARGS) $(SNAKEMAKE_ARGS)
	$(VENV)/bin/snakemake --cores $(CORES) $(RUN_ARGS) $(SNAKEMAKE_ARGS) --report results/report.html

preview: setup compile
	$(VENV)/bin/snakemake results/llm/calls_preview.parquet --cores $(CORES) $(RUN_ARGS) $(SNAKEMAKE_ARGS)

bundle: setup compile
	$(VENV)/bin/snakemake results/bundle --cores $(CORES) $(RUN_ARGS) $(SNAKEMAKE_ARGS)

ARTIFACTS ?=
# every file and cross-reference of the bundle checked before any job (python -m heart.bundle check)
check-bundle: setup compile
	@test -n "$(ARTIFACTS)" || { echo "make $@ needs ARTIFACTS=/path/to/bundle (a folder made by make bundle)" >&2; exit 2; }
	PYTHONPATH=workflow $(VENV)/bin/python -m heart.bundle check "$(ARTIFACTS)"

PAPER_ARGS = --configfile config/artifacts.yaml --config 'artifacts={path: $(ARTIFACTS)}'

paper: check-bundle
	$(VENV)/bin/snakemake --cores $(CORES) $(PAPER_ARGS) $(SNAKEMAKE_ARGS)
	$(VENV)/bin/snakemake --cores $(CORES) $(PAPER_ARGS) $(SNAKEMAKE_ARGS) --report results/report.html

# the code checks first (ruff, snakefmt --check on the rules), then the suite: two workers, a test file's tests on
# one, the files using the session's judged workflow on one (it is built once), the longest files first
# (tests/conftest.py; xdist would otherwise start the files with the most tests first, and the one-test
# local-model file last); the 15 slowest tests, the 15 test files that took the most CPU (tests/support/cpu_report.py:
# on two cores the suite is CPU-bound) and the wall time are printed, so that growth is seen when it happens
TIMED = start=$$(date +%s); $(1); status=$$?; echo "$(2): $$(( $$(date +%s) - start )) s wall"; exit $$status

test: setup browser compile
	@$(call TIMED,$(MAKE) --no-print-directory lint && $(VENV)/bin/python -m pytest -n 2 --dist loadscope \
	  --no-loadscope-reorder --durations=15 --cpu-files=15 $(PYTEST_ARGS),make test)

# the unit and dag tiers on the project's own fixtures (tests on the real data of ../shared run in make test)
test-fast: setup compile
	@$(call TIMED,$(MAKE) --no-print-directory lint && $(VENV)/bin/python -m pytest -n 2 --dist load \
	  -m "not e2e and not local_llm and not shared_data" $(PYTEST_ARGS),make test-fast)

# the project's code compiled once (compileall writes what is missing or stale): with PYTHONDONTWRITEBYTECODE set,
# as on the build machines, every job and test process would otherwise compile the modules it imports again
compile: setup
	@$(VENV)/bin/python -m compileall -q -j 0 workflow tests

# ruff (pyproject.toml [tool.ruff]) and snakefmt (the rules' format) must find nothing
lint: setup
	$(VENV)/bin/ruff check --quiet .
	$(VENV)/bin/snakefmt --check workflow/rules Snakefile

# installs the browser and proxy tests' apt packages when absent (as root), else says what to install
browser:
	@if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ] && [ -x /usr/sbin/nginx ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "installing $(BROWSER_PACKAGES) for the browser and proxy tests (apt-get)"; \
	  had_nginx=$$([ -x /usr/sbin/nginx ] && echo yes); \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get install -y -q $(BROWSER_PACKAGES) >/dev/null 2>&1 \
	  || { apt-get update -q >/dev/null && apt-get install -y -q $(BROWSER_PACKAGES) >/dev/null; }; \
	  if [ -z "$$had_nginx" ] && [ -s /run/nginx.pid ]; then nginx -s stop || true; fi; \
	else echo "the browser and proxy tests need Debian's $(BROWSER_PACKAGES): sudo apt-get install $(BROWSER_PACKAGES)" >&2; exit 1; fi

annotate: setup
	$(VENV)/bin/snakemake --cores $(CORES) results/annotation/tasks.parquet $(RUN_ARGS) $(SNAKEMAKE_ARGS)
	PYTHONPATH=workflow $(VENV)/bin/python -m heart.annotation serve \
	  --tasks results/annotation/tasks.parquet --port $(PORT) $(ANNOTATE_ARGS)

DATA ?= ../shared/data
REHEARSAL_DIR ?= /tmp/heart-rehearsal
REHEARSAL_ARGS ?=
# a scratch clone of this checkout's HEAD (the benchmark wipes its results/): commit what you want rehearsed
rehearsal: setup
	@test -d "$(REHEARSAL_DIR)" || git clone -q . "$(REHEARSAL_DIR)"
	git -C "$(REHEARSAL_DIR)" fetch -q "$(CURDIR)" HEAD && git -C "$(REHEARSAL_DIR)" checkout -q --detach FETCH_HEAD
	$(VENV)/bin/python tests/benchmarks/bench_rehearsal.py --workdir "$(REHEARSAL_DIR)" --data "$(abspath $(DATA))" $(REHEARSAL_ARGS)

# everything the workflow made (results/ but its README, logs/, benchmarks/); never the response cache
# (resources/llm_cache/: answers paid for) nor the human-data store
clean-results:
	find results -mindepth 1 -maxdepth 1 ! -name README.md -exec rm -rf {} +
	rm -rf logs benchmarks
