PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: venv demo test figures bench bench-scale clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# torch first, pinned: the CPU wheel on this machine; an unpinned torch pulls CUDA
	$(BIN)/python -m pip install --quiet "torch==2.13.0"
	$(BIN)/python -m pip install --quiet -e ".[test]"
	touch $(STAMP)

venv: $(STAMP)

# figures go to demo_figs/ (git-ignored), so `make demo` leaves `git status` clean;
# `make figures` regenerates the committed paper_figs/ on purpose
demo: $(STAMP)
	$(BIN)/bayes-concepts demo --space spaces/demo --out results.nc --figures demo_figs

figures: $(STAMP)
	$(BIN)/bayes-concepts demo --figures paper_figs

# the layers contract ([tool.importlinter] in pyproject.toml) first: an upward import or a cycle fails the build
test: $(STAMP)
	$(BIN)/lint-imports
	$(BIN)/python -m pytest tests

# The README's "Speed" table: executor, space build (demo and paper presets), then
# episodes and the full comp-gap table on a paper-scale space (built once, kept in
# $(BENCH_SPACE); results in benchmarks/out/).
BENCH_SPACE ?= spaces/paper

$(BENCH_SPACE)/manifest.json: | $(STAMP)
	$(BIN)/bayes-concepts space build $(BENCH_SPACE) --preset paper

bench: $(STAMP) $(BENCH_SPACE)/manifest.json
	$(BIN)/python benchmarks/executor.py
	$(BIN)/python benchmarks/space_build.py
	$(BIN)/python benchmarks/episodes.py $(BENCH_SPACE)
	$(BIN)/python benchmarks/gap.py $(BENCH_SPACE)

# The "Scaling out" figures (benchmarks/scale.py): the comp-gap table's peak memory on
# $(BENCH_SPACE), the 990,000-scene build in-process vs a 2-process LocalCluster, and a
# 5,000,000-scene space built and scored on local:2 (26 GB of disk in spaces/curi5m).
# One job at a time; hours on this 2-core machine.
bench-scale: $(STAMP) $(BENCH_SPACE)/manifest.json
	$(BIN)/python benchmarks/scale.py all --space $(BENCH_SPACE)

clean:
	rm -rf $(VENV) build *.egg-info
