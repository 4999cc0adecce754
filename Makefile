# Two entry points for a fresh machine: `make run` (the example job on 2 local hosts)
# and `make test` (lint + the whole suite, then `make test-images`). Both create .venv
# from pyproject.toml first.

VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test test-fast test-images bench

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
	$(MAKE) test-images

test-fast: $(STAMP)
	$(VENV)/bin/pytest -m "not multiprocess"

# The runtime on each image: auto image's TensorFlow/Keras pair that the main environment
# lacks: one environment per tests/lanes/*.txt (its pins plus this project), under .venv so
# `rm -rf .venv` resets it too. Python is this machine's python3 (3.11, the Python of the
# tensorflow/tensorflow images). Per lane: about 30 s to install, 30 s to test.
LANES := $(basename $(notdir $(wildcard tests/lanes/*.txt)))
# Each lane's own pins, not the main environment's (keras, tensorflow): these tests only.
LANE_DESELECT := tests/cloudtrain_runtime/test_containers.py::test_keras_pin_is_the_version_the_runtime_is_tested_with

$(VENV)/lanes/%/.installed: tests/lanes/%.txt pyproject.toml
	python3 -m venv $(VENV)/lanes/$*
	$(VENV)/lanes/$*/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/lanes/$*/bin/python -m pip install --quiet -r $< -e '.[test]'
	touch $@

test-images: $(foreach lane,$(LANES),$(VENV)/lanes/$(lane)/.installed)
	set -e; for lane in $(LANES); do \
		echo "== lane $$lane:" $$($(VENV)/lanes/$$lane/bin/python -m pip freeze | grep -E '^(keras|tensorflow([-_]cpu)?)=='); \
		$(VENV)/lanes/$$lane/bin/pytest -p no:cacheprovider -m "not multiprocess" --deselect $(LANE_DESELECT) tests/cloudtrain_runtime; \
		$(VENV)/lanes/$$lane/bin/pytest -p no:cacheprovider -k keras3 tests/cloudtrain_runtime/test_multiworker.py; \
	done

bench: $(STAMP)
	$(PY) benchmarks/cli_startup.py
