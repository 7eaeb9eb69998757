# workbench: `make setup` once, then `make test` / `make bench` / `make check`.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
export WORKBENCH_CORPUS ?= $(abspath ../shared/corpus)

.PHONY: setup test check bench bench-scale clean demo mutation docs

setup: $(BIN)/workbench

# The editable install's modules are compiled to bytecode at the end, as pip compiles a wheel's: a shell
# with PYTHONDONTWRITEBYTECODE set would otherwise compile them at every command (0.15 s of a report's 1.1 s).
$(BIN)/workbench: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[all,dev,browser,docs]'
	$(BIN)/python -c "from workbench.tokens.bpe import seed_tiktoken_cache; print('tiktoken BPE cache:', seed_tiktoken_cache())"
	bash scripts/fetch_widget_js.sh
	$(BIN)/python -m compileall -q workbench
	@touch $@

test: setup
	$(BIN)/python -m pytest -q

check: setup
	$(BIN)/ruff check workbench tests
	$(BIN)/mypy
	$(BIN)/python scripts/check_process_talk.py

# Each command starts from the package's bytecode, as an installed wheel's does (compileall writes it even
# where PYTHONDONTWRITEBYTECODE is set, which otherwise compiles every module at every start).
bench: setup
	$(BIN)/python -m compileall -q workbench
	$(BIN)/python benchmarks/bench_tokens.py
	$(BIN)/python benchmarks/bench_token_sequences.py
	$(BIN)/python benchmarks/bench_replay.py
	$(BIN)/python benchmarks/bench_sweep.py
	$(BIN)/python benchmarks/bench_widgets.py
	$(BIN)/python benchmarks/bench_invariants.py
	$(BIN)/python benchmarks/bench_request_check.py
	$(BIN)/python benchmarks/bench_session_length.py
	$(BIN)/python benchmarks/bench_tuning.py

# The corpus at 1x, 8x and ~1 GB (temporary copies, deleted after): ingest, replay, sweep, planning 10k sessions.
bench-scale: setup
	$(BIN)/python benchmarks/bench_scale.py

# Mutation testing of the reference modules ([tool.mutmut] in pyproject.toml): one worker, niced (the
# machine is shared); results in mutants/, summary with `.venv/bin/mutmut results`. Not part of `make test`.
mutation: setup
	nice -n 19 $(BIN)/mutmut run --max-children 1
	$(BIN)/python scripts/mutation_score.py

demo: setup
	$(BIN)/workbench demo --out results/demo

clean:
	rm -rf $(VENV) .pytest_cache build site *.egg-info

# The documentation site into site/ (strict: a broken link or a page missing from the nav fails).
docs: setup
	NO_MKDOCS_2_WARNING=1 DISABLE_MKDOCS_2_WARNING=true $(BIN)/mkdocs build --strict --site-dir site
