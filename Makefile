# Two entry points for a fresh machine: `make run` (the example job on 2 local hosts)
# and `make test` (lint + the whole suite). Both create .venv from pyproject.toml first.

VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test test-fast bench

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[all,test]'
	# tf-keras (legacy Keras 2 path) declares a dependency on the full `tensorflow`
	# wheel, which would overwrite tensorflow-cpu: install it without dependencies.
	$(PY) -m pip install --quiet --no-deps 'tf-keras==2.21.*'
	touch $@

run: $(STAMP)
	$(VENV)/bin/cloudtrain submit examples/binary_classifier/job.yaml

test: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy sdk/cloudtrain entrypoints/cloudtrain_runtime
	$(VENV)/bin/pytest

test-fast: $(STAMP)
	$(VENV)/bin/pytest -m "not multiprocess"

bench: $(STAMP)
	$(PY) benchmarks/cli_startup.py
