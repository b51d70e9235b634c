# The two commands of the README:
#   make demo   set everything up, then train a model on 2 worker processes (the main job)
#   make test   set everything up, then run the whole test suite
#   make test-repeat N=10 LOAD=2   the multi-process tests N times in a row, beside LOAD CPU burners
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
TORCH_PIN := torch==2.13.0

N ?= 10
LOAD ?= 0

.PHONY: demo test test-repeat bench setup clean

$(VENV)/.installed: pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check $(TORCH_PIN)
	$(PY) -m pip install -q --disable-pip-version-check -e '.[test,demo,ps]'
	touch $@

setup: $(VENV)/.installed

demo: setup
	$(PY) -m distribute.launch --workers 2 examples/train_digits.py $(ARGS)

test: setup
	bash scripts/run_tests.sh $(PY)

test-repeat: setup
	bash scripts/repeat_tests.sh $(PY) $(N) $(LOAD)

bench: setup
	$(PY) bench/run_all.py

clean:
	rm -rf $(VENV) .pytest_cache
