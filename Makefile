# Every target creates .venv and installs what it needs: nothing is installed by hand.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench soak cluster-demo crash-matrix clean

# The installed packages' bytecode is compiled once here (and `test` compiles sparktide's):
# under PYTHONDONTWRITEBYTECODE (set on this machine) no import caches any, and every
# process of a run would compile the modules it imports again. Not the packages' own
# test suites (most of their source, never imported), and on every core.
# pyspark goes first: for the tests, while pip installs the rest on one core, the other
# makes the archive of Spark's classes the suite's JVMs map (tests/class_archive.py; a
# run without it makes it in the background as it starts, at a cost to its first tests).
PYSPARK = $(shell $(PYTHON) -c 'import tomllib; print(next(d for d in tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"] if d.startswith("pyspark")))' 2>/dev/null)
ARCHIVE = $(if $(filter test crash-matrix,$(MAKECMDGOALS)),$(PY) -m tests.class_archive,true)
$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "sparktide needs Python 3.11+"'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --no-compile --upgrade pip
	$(PY) -m pip install -q --no-compile '$(PYSPARK)'
	$(ARCHIVE) & archive=$$!; \
	$(PY) -m pip install -q --no-compile -e '.[dev]' \
	&& $(PY) -m compileall -q -j 0 -x '/tests/' $(VENV)/lib; \
	installed=$$?; wait $$archive; exit $$installed
	@touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/sparktide demo

test: $(STAMP)
	$(VENV)/bin/ruff check src tests bench
	$(PY) -m compileall -q src
	$(PY) -m pytest -q -n 2 --dist worksteal

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/ruff format --check src tests bench

# reference engine, throughput against plain Spark, latency, memory/state; then one table
# (measured on 2 busy cores: see docs/performance.md for how long each step takes)
bench: $(STAMP)
	$(PY) bench/reference_engine.py
	$(PY) bench/spark_vs_plain.py --keys 10000 1000000 --formats jsonl parquet
	$(PY) bench/spark_vs_plain.py --keys 10000 1000000 --layout partition --no-profile \
		--out bench/results/spark_vs_plain_partition.json
	$(PY) bench/latency.py
	$(PY) bench/idle.py
	$(PY) bench/memory.py
	$(PY) bench/ui.py
	$(PY) bench/summary.py

# 3M disorderly events through 2 x 30 micro-batches: state and memory per batch (10-25 min)
soak: $(STAMP)
	$(PY) bench/soak.py

crash-matrix: $(STAMP)
	SPARKTIDE_CRASH_MATRIX=full $(PY) -m pytest -q -s tests/spark/test_crash_matrix.py

cluster-demo: $(STAMP)
	$(PY) bench/cluster_demo.py

clean:
	rm -rf $(VENV) build dist src/*.egg-info .pytest_cache .hypothesis
