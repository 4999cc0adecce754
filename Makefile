# Two entry points for a fresh machine: `make run` (the example job on 2 local hosts)
# and `make test` (lint + the whole suite, the documentation build included, then
# `make test-lanes`). Both create .venv from pyproject.toml first. `make docs` builds the
# documentation site into docs/_build/html.

VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test test-fast test-lanes bench docs

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[all,test,docs]'
	# tf-keras (legacy Keras 2 path) declares a dependency on the full `tensorflow`
	# wheel, which would overwrite tensorflow-cpu: install it without dependencies.
	$(PY) -m pip install --quiet --no-deps 'tf-keras==2.21.*'
	# The MLflow tracking server the tracking tests start on loopback (tests/mlflow_server.py):
	# the full mlflow package, whose pins are not the SDK's, in an environment of its own.
	python3 -m venv $(VENV)/mlflow-server
	$(VENV)/mlflow-server/bin/python -m pip install --quiet 'mlflow>=3.7,<4'
	touch $@

run: $(STAMP)
	$(VENV)/bin/cloudtrain submit examples/binary_classifier/job.yaml

test: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy sdk/cloudtrain entrypoints/cloudtrain_runtime
	$(VENV)/bin/pytest
	$(MAKE) -j2 -Otarget test-lanes

test-fast: $(STAMP)
	$(VENV)/bin/pytest -m "not multiprocess"

# Lanes: environments the main one cannot be, one per tests/lanes/<name>.txt, under .venv
# so `rm -rf .venv` resets them too. A lane file is a pip requirements file (its pins and
# `-e .[extras]`) whose `# run: ARGS` lines are the pytest runs to make there. Python is
# this machine's python3 (3.11, the Python of the tensorflow/tensorflow images). A lane runs a
# file or a few in one process (-n 0): parallel workers would each start the lane's heavy
# imports and module fixtures again for a handful of tests.
LANES := $(basename $(notdir $(wildcard tests/lanes/*.txt)))

$(VENV)/lanes/%/.installed: tests/lanes/%.txt pyproject.toml
	python3 -m venv $(VENV)/lanes/$*
	$(VENV)/lanes/$*/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/lanes/$*/bin/python -m pip install --quiet -r $<
	touch $@

# Two lanes at a time (`make test` runs `make -j2 -Otarget test-lanes`): a lane is one
# process, mostly importing, so a second one keeps the other core busy; -Otarget prints
# each lane's output together once it ends.
LANE_RUNS := $(LANES:%=lane-%)
.PHONY: $(LANE_RUNS)

test-lanes: $(LANE_RUNS)

$(LANE_RUNS): lane-%: $(VENV)/lanes/%/.installed
	@sed -n 's/^# run: //p' tests/lanes/$*.txt | while read -r args; do \
		echo "== lane $*: pytest $$args"; \
		eval "$(VENV)/lanes/$*/bin/pytest -p no:cacheprovider -n 0 $$args" || exit 1; \
	done

# Warnings are errors (-W), as in the suite's tests/test_docs_site.py.
docs: $(STAMP)
	$(VENV)/bin/sphinx-build -W --keep-going -q -b html docs docs/_build/html

bench: $(STAMP)
	$(PY) benchmarks/cli_startup.py
