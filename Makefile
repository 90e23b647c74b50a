# xeus-sot: `make demo` (set up, build, run the demo notebook) and `make test` (set up, build, every suite).
# Builds use Debian's Python (/usr/bin/python3, the interpreter the kernel embeds); everything Python runs from the
# project environments in .venv/ that `make deps` makes from the pinned lock files in share/python/:
#   .venv/kernel    Debian's 3.11 + NumPy 2.x, IPython 8, xeus-python-shell, JupyterLab 4, Notebook 7, test tools
#   .venv/numpy124  Debian's 3.11 + NumPy 1.24 (the NumPy suites run under it too)
#   .venv/py312, .venv/py313  pyenv's 3.12.1 / 3.13.0 + NumPy 2.x, IPython, pytest

PY          := /usr/bin/python3
BUILD       := build
VENV        := $(CURDIR)/.venv
KPY         := $(VENV)/kernel/bin/python3
NP124_PY    := $(VENV)/numpy124/bin/python3
PYENV_ROOT  ?= $(shell pyenv root 2>/dev/null || echo $(HOME)/.pyenv)
PY312       := $(PYENV_ROOT)/versions/3.12.1/bin/python3
PY313       := $(PYENV_ROOT)/versions/3.13.0/bin/python3
EXTRA_PYTHONS := $(wildcard $(PY312) $(PY313))
# The environments of the pyenv interpreters that exist (same order as EXTRA_PYTHONS).
EXTRA_ENV_PYTHONS := $(if $(wildcard $(PY312)),$(VENV)/py312/bin/python3) $(if $(wildcard $(PY313)),$(VENV)/py313/bin/python3)
JOBS        ?= 2
# ccache: one cache for every checkout of the project (paths taken relative to the checkout, the directory of a
# debug build not hashed), so a fresh clone (CI) reuses what an earlier build compiled.
export CCACHE_BASEDIR ?= $(CURDIR)
export CCACHE_NOHASHDIR ?= 1
WERROR      ?= ON
CMAKE_ARGS  ?=
SERVE       ?=
PORT        ?= 8888
# The Python suites run on $(JOBS) workers (pytest-xdist), a test file per worker at a time; the kernel, notebook
# and browser tests run alone (they start kernels and servers).
XDIST       := -n $(JOBS) --dist loadfile
PYTEST_ONE  := $(KPY) -m pytest -c tests/pytest.ini
PYTEST      := $(PYTEST_ONE) $(XDIST)
PYTEST_NP124 := $(NP124_PY) -m pytest -c tests/pytest.ini $(XDIST)
# Jupyter state of the test runs stays inside the build tree.
TEST_JUPYTER_ENV = JUPYTER_PATH=$(CURDIR)/$(BUILD)/share/jupyter JUPYTER_DATA_DIR=$(CURDIR)/$(BUILD)/test-jupyter/data \
  JUPYTER_RUNTIME_DIR=$(CURDIR)/$(BUILD)/test-jupyter/runtime JUPYTER_CONFIG_DIR=$(CURDIR)/$(BUILD)/test-jupyter/config \
  IPYTHONDIR=$(CURDIR)/$(BUILD)/test-jupyter/ipython PYTHONPATH=$(CURDIR)/$(BUILD)/python PYTHONDONTWRITEBYTECODE=1 \
  SOT_CACHE_DIR=$(CURDIR)/$(BUILD)/test-jupyter/sot-cache

CPYTHON_ROUNDTRIP_MODULES := test_grammar test_scope test_exceptions test_generators test_with test_contextlib \
  test_patma test_listcomps
CPYTHON_CAPTURE_MODULES := test_grammar test_scope test_generators test_exceptions test_with test_contextlib \
  test_sys_settrace test_threading test_frame test_funcattrs
# Every frame of these CPython test modules translated: a few in `make test`, all of the issue's in
# `make test-translate-all` (heavy).
CPYTHON_TRANSLATE_MODULES := test_grammar test_scope test_with test_patma test_contextlib test_raise
CPYTHON_TRANSLATE_ALL_MODULES := test_grammar test_scope test_generators test_exceptions test_with test_contextlib \
  test_listcomps test_setcomps test_dictcomps test_genexps test_patma test_unpack test_unpack_ex test_extcall \
  test_keywordonlyarg test_positional_only_arg test_class test_super test_property test_dataclasses test_functools \
  test_itertools test_fstring test_named_expressions test_raise test_yield_from test_iter test_sort \
  test_types test_copy test_int test_float test_calendar test_dict test_set test_list test_enum test_bool \
  test_tuple test_range test_string test_complex test_long test_operator test_collections test_heapq test_bisect \
  test_textwrap test_fractions test_statistics test_userdict test_userlist test_slice test_augassign test_opcodes \
  test_compare test_richcmp test_funcattrs test_string_literals test_binop test_contains test_abc test_format \
  test_json test_re test_builtin test_bytes test_userstring test_defaultdict test_ordered_dict test_deque test_pow \
  test_int_literal test_dictviews test_keyword test_base64 test_difflib test_shlex test_pprint test_reprlib \
  test_struct test_baseexception test_global test_structseq test_isinstance test_index test_genericalias \
  test_random test_typechecks test_decimal test_math

.PHONY: all deps lock configure build test test-cpp test-python test-python-extra test-kernel test-notebooks test-browser demo \
        test-cpython test-translate-all test-native-all check-layers bench bench-peers-deps bench-peers fuzz fuzz-programs test-fuzz-smoke doc-opcodes test-asan \
        kernelspec-install format format-check tidy tidy-size clean

all: build

deps:
	@share/tools/install-deps.sh
	@share/tools/envs.sh install kernel numpy124 py312 py313

# Recompiles share/python/*.lock from the .in files (newest versions that fit; needs PyPI). Commit the result.
lock:
	share/tools/envs.sh lock

# Re-run when the Makefile changes, so its -D settings (e.g. the kernel environment) reach an existing build.
$(BUILD)/build.ninja: Makefile
	cmake -S . -B $(BUILD) -G Ninja -DPython_EXECUTABLE=$(PY) -DSOT_WERROR=$(WERROR) \
	  "-DSOT_EXTRA_PYTHONS=$(EXTRA_PYTHONS)" -DSOT_KERNEL_PYTHON=$(KPY) $(CMAKE_ARGS)

configure: deps $(BUILD)/build.ninja

build: configure
	cmake --build $(BUILD) -j $(JOBS)

test: build
	@$(MAKE) --no-print-directory test-cpp check-layers tidy-size test-python test-python-extra test-native-all test-cpython \
	  test-fuzz-smoke test-kernel test-notebooks test-browser

test-cpp:
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# NumPy 2.x on 3.11 (every suite), then the NumPy suites again under NumPy 1.24: with its legacy promotion and
# with NEP 50 promotion (1.24's 'weak' state).
test-python: $(BUILD)/test-jupyter
	$(TEST_JUPYTER_ENV) $(PYTEST) tests/python
	@echo "== NumPy suites on the numpy reference backend"
	$(TEST_JUPYTER_ENV) SOT_BACKEND=numpy $(PYTEST) tests/python/graph
	@echo "== NumPy suites on the cpu backend (blocks of 64 elements: every group crosses blocks and threads), every"
	@echo "   kernel also emitted as CUDA C++ and compiled by NVRTC for sm_90 (the CUDA compile check), tier C's"
	@echo "   native loops compiled before their first run (every run of them native)"
	$(TEST_JUPYTER_ENV) SOT_BACKEND=cpu SOT_CPU_BLOCK=64 SOT_CUDA_CHECK=1 SOT_CPU_TIER_C=sync $(PYTEST) tests/python/graph
	@echo "== The cuda backend's NumPy suites on the simulated device (residency: device values across groups, loop"
	@echo "   steps and cond ways; kernels compiled for the host from their CUDA C++; products as NumPy's matmul)"
	$(TEST_JUPYTER_ENV) SOT_BACKEND=cuda SOT_CUDA_SIMULATE=1 $(PYTEST) $(addprefix tests/python/graph/,$(CUDA_SIM_SUITES))
	@echo "== NumPy suites on the cpu backend under NumPy 1.24, every graph native from its first call (tier C forced:"
	@echo "   its hot calls 0, graphs with no loop op included, compiled before their first run)"
	$(TEST_JUPYTER_ENV) SOT_BACKEND=cpu SOT_CPU_BLOCK=64 SOT_CPU_TIER_C=sync SOT_CPU_TIER_C_HOT=0 $(PYTEST_NP124) tests/python/graph
	@echo "== NumPy suites under NumPy 1.24 (legacy value-based promotion)"
	$(TEST_JUPYTER_ENV) $(PYTEST_NP124) tests/python/graph
	@echo "== NumPy suites under NumPy 1.24 with NEP 50 promotion ('weak' state), on the numpy reference backend"
	$(TEST_JUPYTER_ENV) SOT_BACKEND=numpy SOT_TEST_NUMPY_PROMOTION=weak $(PYTEST_NP124) tests/python/graph

# The suites the cuda backend runs on the simulated device in make test (tests/device/cuda_check.sh runs these and
# more on a GPU).
CUDA_SIM_SUITES := test_numpy_elementwise.py test_numpy_more.py test_numpy_shapes.py test_numpy_errors.py \
  test_numpy_programs.py test_numpy_loops.py test_numpy_conds.py test_numpy_while_loops.py

# Every pure-Python suite (NumPy 2.x and the magics included) with pyenv's 3.12.1 and 3.13.0, from their
# environments, every graph native from its first call (tier C forced: compiled before its first run, its hot
# calls 0, so graphs with no loop op too; the tests of tiers A and B pin the hot calls at their default).
test-python-extra: $(BUILD)/test-jupyter
	@if [ -z "$(EXTRA_PYTHONS)" ]; then echo "test-python-extra: no pyenv 3.12.1/3.13.0 found; skipped"; fi
	@set -e; for py in $(EXTRA_ENV_PYTHONS); do \
	  echo "== pure-Python tests with $$py (tier C forced: sync mode, hot calls 0)"; \
	  $(TEST_JUPYTER_ENV) SOT_CPU_TIER_C=sync SOT_CPU_TIER_C_HOT=0 $$py -m pytest -c tests/pytest.ini $(XDIST) -W ignore::DeprecationWarning tests/python; \
	done

$(BUILD)/test-jupyter:
	mkdir -p $@/data $@/runtime $@/config $@/ipython

# The bytecode layer against each interpreter's whole standard library (byte-identical round trip), CPython
# test modules run with their functions' code round-tripped, and CPython test modules run under the capture
# runtime with every frame of the test module replaced by its round-tripped code.
test-cpython:
	@set -e; for py in $(PY) $(EXTRA_PYTHONS); do \
	  PYTHONPATH=$(CURDIR)/$(BUILD)/python PYTHONDONTWRITEBYTECODE=1 $$py tests/cpython/roundtrip_stdlib.py; \
	  PYTHONPATH=$(CURDIR)/$(BUILD)/python PYTHONDONTWRITEBYTECODE=1 $$py tests/cpython/run_roundtripped.py \
	    $(CPYTHON_ROUNDTRIP_MODULES); \
	  PYTHONPATH=$(CURDIR)/$(BUILD)/python PYTHONDONTWRITEBYTECODE=1 $$py tests/cpython/capture_roundtrip.py \
	    $(CPYTHON_CAPTURE_MODULES); \
	  PYTHONPATH=$(CURDIR)/$(BUILD)/python PYTHONDONTWRITEBYTECODE=1 $$py tests/cpython/translate_all.py \
	    --min-pass 0.95 $(CPYTHON_TRANSLATE_MODULES); \
	done

# Every frame of 91 CPython test modules translated, on every Python built (about 10 minutes per Python).
test-translate-all: build
	@set -e; for py in $(PY) $(EXTRA_PYTHONS); do \
	  PYTHONPATH=$(CURDIR)/$(BUILD)/python PYTHONDONTWRITEBYTECODE=1 $$py tests/cpython/translate_all.py \
	    --min-pass 0.95 --min-transformed 0.70 $(CPYTHON_TRANSLATE_ALL_MODULES); \
	done

test-kernel: $(BUILD)/test-jupyter
	$(TEST_JUPYTER_ENV) $(PYTEST_ONE) tests/kernel

test-notebooks: $(BUILD)/test-jupyter
	$(TEST_JUPYTER_ENV) $(PYTEST_ONE) tests/notebooks

# JupyterLab 4 and Notebook 7 (the kernel environment's) on 127.0.0.1 with the xsot kernel; Debian's headless
# chromium driven by playwright for Python runs demo.ipynb; screenshots in $(BUILD)/screenshots/.
test-browser: $(BUILD)/test-jupyter
	$(TEST_JUPYTER_ENV) $(PYTEST_ONE) tests/browser

# Installs the build tree's kernelspec into the user's Jupyter data dir (as `jupyter kernelspec install --user`).
kernelspec-install: build
	$(KPY) -m jupyter_client.kernelspecapp install --user --name xsot $(BUILD)/share/jupyter/kernels/xsot

demo: build kernelspec-install
ifeq ($(SERVE),1)
	@echo "Open the URL printed below (JupyterLab on 127.0.0.1, kernel 'Python 3 (xeus-sot)'; /tree for Notebook 7)."
	PYTHONPATH=$(CURDIR)/$(BUILD)/python $(KPY) -m jupyterlab --ip=127.0.0.1 --port=$(PORT) --no-browser \
	  --ServerApp.root_dir=$(CURDIR)/notebooks $(if $(filter 0,$(shell id -u)),--allow-root)
else
	mkdir -p $(BUILD)/demo
	PYTHONPATH=$(CURDIR)/$(BUILD)/python $(KPY) -m nbconvert --to notebook --execute \
	  --ExecutePreprocessor.kernel_name=xsot --ExecutePreprocessor.timeout=600 \
	  --output-dir $(BUILD)/demo --output demo.ipynb notebooks/demo.ipynb
	$(KPY) -m nbconvert --to html --output-dir $(BUILD)/demo --output demo.html $(BUILD)/demo/demo.ipynb
	@echo "demo: executed notebook and HTML rendering in $(BUILD)/demo/"
endif

# Benchmarks (Google Benchmark), reported as times and ratios against a baseline measured in the same run.
bench: build $(BUILD)/test-jupyter
	$(BUILD)/tests/bench_bytecode --benchmark_min_time=0.5
	$(BUILD)/tests/bench_capture --benchmark_min_time=0.5
	PYTHONPATH=$(CURDIR)/$(BUILD)/python $(KPY) tests/bench/bench_translate.py
	PYTHONPATH=$(CURDIR)/$(BUILD)/python $(KPY) tests/bench/bench_numpy.py
	PYTHONPATH=$(CURDIR)/$(BUILD)/python $(KPY) tests/bench/bench_cpu.py
	PYTHONPATH=$(CURDIR)/$(BUILD)/python $(KPY) tests/bench/bench_fallback.py
	PYTHONPATH=$(CURDIR)/$(BUILD)/python $(KPY) tests/bench/bench_jit_call.py
	PYTHONPATH=$(CURDIR)/$(BUILD)/python $(KPY) tests/bench/bench_loops.py
	PYTHONPATH=$(CURDIR)/$(BUILD)/python $(KPY) tests/bench/bench_loop_corpus.py
	PYTHONPATH=$(CURDIR)/$(BUILD)/python $(KPY) tests/bench/bench_report.py
	$(TEST_JUPYTER_ENV) $(KPY) tests/bench/bench_output.py

# Side by side with TorchDynamo and PaddleSOT (tests/bench/peers/run.py) from .venv/peers (peers-py311.lock: torch,
# paddlepaddle, ...; several GB). Not part of `make test`.
bench-peers-deps:
	share/tools/envs.sh install peers

bench-peers: build bench-peers-deps
	PYTHONPATH=$(CURDIR)/$(BUILD)/python $(VENV)/peers/bin/python3 tests/bench/peers/run.py --out $(BUILD)/bench-peers
	PYTHONPATH=$(CURDIR)/$(BUILD)/python $(VENV)/peers/bin/python3 tests/bench/bench_cpu.py --peers \
	  --json $(BUILD)/bench-peers/cpu.json
	PYTHONPATH=$(CURDIR)/$(BUILD)/python $(VENV)/peers/bin/python3 tests/bench/bench_loop_corpus.py \
	  --json $(BUILD)/bench-peers/loop_corpus.json

# The differential program fuzzer (tests/fuzz_programs/README.md): random Python and NumPy programs, each run
# plainly and through one translated function, failures shrunk and printed. FUZZ_PROGRAMS_SECONDS (default 3600)
# is split between 3.11 and the pyenv Pythons found, FUZZ_PROGRAMS_SEED (default: the time) is the first seed on
# each, FUZZ_PROGRAMS_SAVE=DIR saves new minimal failures there (else a new one makes the target fail). `make
# test` runs its smoke test, tests/python/translator/test_fuzz_smoke.py, in test-python and test-python-extra.
FUZZ_PROGRAMS_SECONDS ?= 3600
FUZZ_PROGRAMS_SEED ?= $(shell date +%s)
fuzz-programs: build
	@status=0; pys="$(KPY) $(EXTRA_ENV_PYTHONS)"; n=$$(echo $$pys | wc -w); \
	for py in $$pys; do \
	  PYTHONPATH=$(CURDIR)/$(BUILD)/python PYTHONDONTWRITEBYTECODE=1 $$py -W ignore::DeprecationWarning \
	    tests/fuzz_programs/run.py --seconds $$(( $(FUZZ_PROGRAMS_SECONDS) / n )) --seed $(FUZZ_PROGRAMS_SEED) \
	    $(if $(FUZZ_PROGRAMS_SAVE),--save $(FUZZ_PROGRAMS_SAVE)) || status=1; \
	done; exit $$status

# libFuzzer (clang) with ASan + UBSan over the bytecode layer. `make fuzz` runs FUZZ_SECONDS (default 600) on a
# copy of tests/fuzz/corpus; `make test` runs a 20-second smoke.
FUZZ_SECONDS ?= 600
FUZZ_BIN := $(BUILD)/fuzz/fuzz_bytecode
BYTECODE_SOURCES := $(wildcard extension/src/bytecode/*.cpp)
$(FUZZ_BIN): $(BYTECODE_SOURCES) $(wildcard extension/src/bytecode/*.hpp) tests/fuzz/fuzz_bytecode.cpp | build
	mkdir -p $(BUILD)/fuzz
	clang++ -std=c++17 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	  -fvisibility=hidden -Iextension/src -I$(BUILD)/extension/generated/311 -isystem /usr/include/python3.11 \
	  tests/fuzz/fuzz_bytecode.cpp $(BYTECODE_SOURCES) -lpython3.11 -o $@

fuzz: $(FUZZ_BIN)
	rm -rf $(BUILD)/fuzz/corpus && cp -r tests/fuzz/corpus $(BUILD)/fuzz/corpus
	ASAN_OPTIONS=detect_leaks=0 $(FUZZ_BIN) -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=4096 \
	  -artifact_prefix=$(BUILD)/fuzz/ $(BUILD)/fuzz/corpus

test-fuzz-smoke:
	@$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=20

# Every suite of tests/python on 3.11 under NumPy 2.x with every graph native from its first call (tier C's hot
# calls 0: graphs with no loop op too, compiled before their first run), as test-python-extra runs 3.12 and 3.13
# and test-python the NumPy suites under NumPy 1.24. In `make test` after test-python-extra, whose compiles of the
# same sources it loads from the disk cache (about 1.5 minutes here then; 6 from a cold cache).
test-native-all: $(BUILD)/test-jupyter
	$(TEST_JUPYTER_ENV) SOT_BACKEND=cpu SOT_CPU_TIER_C=sync SOT_CPU_TIER_C_HOT=0 $(PYTEST) tests/python

# docs/opcodes.md from the opcode tables of the three interpreters' _sot.
doc-opcodes: build
	@set -e; for py in $(PY) $(EXTRA_PYTHONS); do \
	  PYTHONPATH=$(CURDIR)/$(BUILD)/python $$py share/tools/opcode_doc.py --dump $(BUILD)/opcodes-$$($$py -c 'import sys; print("%d%d" % sys.version_info[:2])').json; \
	done
	$(PY) share/tools/opcode_doc.py --merge $$(ls $(BUILD)/opcodes-3*.json | sort -V) > docs/opcodes.md

# ASan + UBSan build (build-asan/: core, _sot for the kernel's Python, C++ tests) running the C++ tests, the
# Python tests and the capture runner on CPython test modules with the sanitizer runtimes preloaded.
ASAN_BUILD := build-asan
ASAN_ENV = ASAN_OPTIONS=detect_leaks=0 LD_PRELOAD="$$(gcc -print-file-name=libasan.so) $$(gcc -print-file-name=libubsan.so)" \
  PYTHONPATH=$(CURDIR)/$(ASAN_BUILD)/python PYTHONDONTWRITEBYTECODE=1
test-asan: deps
	cmake -S . -B $(ASAN_BUILD) -G Ninja -DPython_EXECUTABLE=$(PY) -DSOT_KERNEL_PYTHON=$(KPY) -DSOT_SANITIZE=ON \
	  -DSOT_BUILD_KERNEL=OFF -DSOT_BUILD_BENCHMARKS=OFF -DSOT_WERROR=$(WERROR)
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=0 ctest --output-on-failure
	$(ASAN_ENV) $(KPY) -m pytest -c tests/pytest.ini tests/python
	$(ASAN_ENV) $(PY) tests/cpython/capture_roundtrip.py test_generators test_frame test_scope test_with
	$(ASAN_ENV) $(PY) tests/cpython/translate_all.py test_scope test_with test_raise

CXX_SOURCES = $(shell git ls-files '*.cpp' '*.hpp')

format:
	clang-format -i $(CXX_SOURCES)

format-check:
	clang-format --dry-run --Werror $(CXX_SOURCES)

tidy: build
	clang-tidy -p $(BUILD) --quiet $(filter %.cpp,$(CXX_SOURCES))

# Function size (150 lines) and cognitive complexity (50) in every source file of extension/src, every folder.
TIDY_SIZE_SOURCES := $(sort $(shell find extension/src -name '*.cpp'))
# The floors of extension/src (which folder may include which, includes written one way) and no source file over
# 800 lines: share/tools/check_layers.py, the rules docs/architecture.md draws.
check-layers:
	$(PY) share/tools/check_layers.py --max-lines 800

# A file whose exact input (its compile commands, every file its compile read, the config, clang-tidy's version)
# passed before is not checked again (share/tools/tidy_cached.py; the cache is shared by checkouts as ccache's is).
tidy-size: build
	@echo "clang-tidy (function size and complexity): $(words $(TIDY_SIZE_SOURCES)) files"
	@$(PY) share/tools/tidy_cached.py --build $(BUILD) --config share/tidy/size.yaml --jobs $(JOBS) \
	  $(TIDY_SIZE_SOURCES)

clean:
	rm -rf $(BUILD)
