# The two commands of the README:
#   make demo   set everything up, then train a model on 2 worker processes (the main job)
#   make test   set everything up, then run the whole test suite
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
TORCH_PIN := torch==2.13.0

.PHONY: demo test bench setup clean

$(VENV)/.installed: pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check $(TORCH_PIN)
	$(PY) -m pip install -q --disable-pip-version-check -e '.[test,demo]'
	touch $@

setup: $(VENV)/.installed

demo: setup
	$(PY) -m distribute.launch --workers 2 examples/train_digits.py $(ARGS)

test: setup
	bash scripts/run_tests.sh $(PY)

bench: setup
	$(PY) bench/run_all.py

clean:
	rm -rf $(VENV) .pytest_cache
