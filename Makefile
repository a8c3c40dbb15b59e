PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: venv demo test test-all figures docs docs-check bench bench-scale clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# torch first, pinned: the CPU wheel on this machine; an unpinned torch pulls CUDA
	$(BIN)/python -m pip install --quiet "torch==2.13.0"
	$(BIN)/python -m pip install --quiet -e ".[test,docs]"
	# the package's bytecode written once here, as pip does for a regular install (an editable one
	# leaves it to the first import, which writes nothing where PYTHONDONTWRITEBYTECODE is set, so
	# every command, notebook kernel and test process compiled every module again: ~0.2 s each)
	$(BIN)/python -m compileall -q bayes_concepts
	# numba's kernels compiled once here, into its cache (__pycache__ beside the modules), so
	# that the first `make demo` does not wait about a minute for the compiler
	$(BIN)/bayes-concepts compile
	touch $(STAMP)

venv: $(STAMP)

# figures go to demo_figs/ (git-ignored), so `make demo` leaves `git status` clean;
# `make figures` (below) regenerates the committed paper_figs/ at paper scale, on purpose
demo: $(STAMP)
	$(BIN)/bayes-concepts demo --space spaces/demo --out results.nc --force --figures demo_figs

# the layers contract ([tool.importlinter] in pyproject.toml) first: an upward import or a cycle fails the build;
# then the API reference, warnings as errors (a broken docstring fails the build; ~40 s, notebooks not run);
# then the tests, one worker per core (pytest-xdist; a file's tests stay in one worker, so its
# module fixtures are built once; the files longest first, as tests/conftest.py orders them, not
# xdist's most-tests-first, which left the few long files for last: a worker idle at the end)
test: $(STAMP)
	$(BIN)/lint-imports
	$(MAKE) docs-check
	$(BIN)/python -m pytest tests -n auto --dist loadfile --no-loadscope-reorder -m "not slow"

# `make test` and the tests marked slow (pyproject.toml's markers): the whole suite
test-all: $(STAMP)
	$(BIN)/lint-imports
	$(MAKE) docs-check
	$(BIN)/python -m pytest tests -n auto --dist loadfile --no-loadscope-reorder

# The guide's "Speed" table (docs/performance.md): executor, space build (demo and paper presets), then
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

# The "Scaling" figures of docs/performance.md (benchmarks/scale.py): the comp-gap table's peak memory on
# $(BENCH_SPACE), the 990,000-scene build in-process vs a 2-process LocalCluster, and a
# 5,000,000-scene space built and scored on local:2 (26 GB of disk in spaces/curi5m).
# One job at a time; hours on this 2-core machine.
bench-scale: $(STAMP) $(BENCH_SPACE)/manifest.json
	$(BIN)/python benchmarks/scale.py all --space $(BENCH_SPACE)

# The committed paper_figs/, as the guide (docs/jobs/figures.md) says they are made: comp gap (hard, easy), entropy,
# episode view, synonym classes and scene properties from the curi space with protocol
# curi-release (seed 0, 20,000 episodes per cell; the tables in analyses/out/reproduce_curi_full/),
# gap vs divergence from the paper-scale space (seed 0, 2,000 episodes per cell), modalities.png
# from the demo space, shj_people (people against the ideal observer on Shepard, Hovland &
# Jenkins' six structures) from benchmarks/shj_fit.py.  Missing spaces are built first (seed 0).
# Paper scale: two 990,000-scene spaces and two 20,000-episode tables.  Demo-space figures:
# `make demo`.
CURI_SPACE ?= spaces/curi
DEMO_SPACE ?= spaces/demo

$(CURI_SPACE)/manifest.json: | $(STAMP)
	$(BIN)/bayes-concepts space build $(CURI_SPACE) --preset curi

$(DEMO_SPACE)/manifest.json: | $(STAMP)
	$(BIN)/bayes-concepts space build $(DEMO_SPACE) --preset demo

figures: $(STAMP) $(CURI_SPACE)/manifest.json $(BENCH_SPACE)/manifest.json $(DEMO_SPACE)/manifest.json
	$(BIN)/python analyses/reproduce_curi.py --space $(CURI_SPACE) --episodes 20000 --seed 0 \
		--out analyses/out/reproduce_curi_full --figures paper_figs
	$(BIN)/python analyses/gap_vs_divergence.py --space $(BENCH_SPACE) --episodes 2000 --seed 0 --figures paper_figs
	$(BIN)/python paper_figs/modalities.py $(DEMO_SPACE)
	$(BIN)/python benchmarks/shj_fit.py fit --seed 0 --figures paper_figs

# The guide and API reference in docs/_build/html/ (open index.html): the pages of docs/, the docstrings and the
# notebooks, which `make docs` runs on the demo space first (built if missing; minutes the first
# time, their outputs cached in docs/_build/.jupyter_cache/ afterwards).  Warnings are
# errors.  `docs-check` (part of `make test`) builds it without running the notebooks.
SPHINX := $(BIN)/sphinx-build -W --keep-going -q -b html

docs: $(STAMP) $(DEMO_SPACE)/manifest.json
	BAYES_CONCEPTS_DOCS_EXECUTE=cache BAYES_CONCEPTS_SPACE=$(abspath $(DEMO_SPACE)) MPLBACKEND=Agg \
		$(SPHINX) -d docs/_build/doctrees docs docs/_build/html

docs-check: $(STAMP)
	BAYES_CONCEPTS_DOCS_EXECUTE=off $(SPHINX) -d docs/_build/check-doctrees docs docs/_build/check

clean:
	rm -rf $(VENV) build *.egg-info
