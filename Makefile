# xeus-sot: `make demo` (set up, build, run the demo notebook) and `make test` (set up, build, every suite).
# Everything runs with Debian's Python (/usr/bin/python3); pyenv's 3.12/3.13 get the extension and its
# pure-Python tests.

PY          := /usr/bin/python3
BUILD       := build
PYENV_ROOT  ?= $(shell pyenv root 2>/dev/null || echo $(HOME)/.pyenv)
PY312       := $(PYENV_ROOT)/versions/3.12.1/bin/python3
PY313       := $(PYENV_ROOT)/versions/3.13.0/bin/python3
EXTRA_PYTHONS := $(wildcard $(PY312) $(PY313))
JOBS        ?= 2
WERROR      ?= ON
CMAKE_ARGS  ?=
SERVE       ?=
PORT        ?= 8888
PYTEST      := $(PY) -m pytest -c tests/pytest.ini
# Jupyter state of the test runs stays inside the build tree.
TEST_JUPYTER_ENV = JUPYTER_PATH=$(CURDIR)/$(BUILD)/share/jupyter JUPYTER_DATA_DIR=$(CURDIR)/$(BUILD)/test-jupyter/data \
  JUPYTER_RUNTIME_DIR=$(CURDIR)/$(BUILD)/test-jupyter/runtime JUPYTER_CONFIG_DIR=$(CURDIR)/$(BUILD)/test-jupyter/config \
  IPYTHONDIR=$(CURDIR)/$(BUILD)/test-jupyter/ipython PYTHONPATH=$(CURDIR)/$(BUILD)/python PYTHONDONTWRITEBYTECODE=1

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
  test_itertools test_fstring test_named_expressions test_raise test_yield_from test_iter test_sort

.PHONY: all deps configure build test test-cpp test-python test-python-extra test-kernel test-notebooks test-browser demo \
        test-cpython test-translate-all bench fuzz test-fuzz-smoke doc-opcodes test-asan \
        kernelspec-install format format-check tidy clean

all: build

deps:
	@share/tools/install-deps.sh

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DPython_EXECUTABLE=$(PY) -DSOT_WERROR=$(WERROR) \
	  "-DSOT_EXTRA_PYTHONS=$(EXTRA_PYTHONS)" $(CMAKE_ARGS)

configure: deps $(BUILD)/build.ninja

build: configure
	cmake --build $(BUILD) -j $(JOBS)

test: build
	@$(MAKE) --no-print-directory test-cpp test-python test-python-extra test-cpython test-fuzz-smoke test-kernel \
	  test-notebooks test-browser

test-cpp:
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-python: $(BUILD)/test-jupyter
	$(TEST_JUPYTER_ENV) $(PYTEST) tests/python
	@echo "== NumPy capture tests again under NEP 50 promotion (NumPy 2's rules, NumPy 1.24's 'weak' state)"
	$(TEST_JUPYTER_ENV) SOT_TEST_NUMPY_PROMOTION=weak $(PYTEST) tests/python/graph

# pyenv's interpreters have no pytest of their own: they borrow Debian's pure-Python pytest (a folder of links
# to it and its pure-Python dependencies only, so nothing compiled for 3.11 leaks in).
$(BUILD)/pytest-site:
	mkdir -p $@
	for p in _pytest pytest pluggy iniconfig packaging py py.py attr; do ln -sfn /usr/lib/python3/dist-packages/$$p $@/$$p; done

test-python-extra: $(BUILD)/pytest-site
	@if [ -z "$(EXTRA_PYTHONS)" ]; then echo "test-python-extra: no pyenv 3.12.1/3.13.0 found; skipped"; fi
	@set -e; for py in $(EXTRA_PYTHONS); do \
	  echo "== pure-Python tests with $$py"; \
	  PYTHONPATH=$(CURDIR)/$(BUILD)/python:$(CURDIR)/$(BUILD)/pytest-site PYTHONDONTWRITEBYTECODE=1 \
	    $$py -m pytest -c tests/pytest.ini -W ignore::DeprecationWarning tests/python; \
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

# The issue's acceptance run: every frame of 28 CPython test modules translated, on every Python built.
test-translate-all: build
	@set -e; for py in $(PY) $(EXTRA_PYTHONS); do \
	  PYTHONPATH=$(CURDIR)/$(BUILD)/python PYTHONDONTWRITEBYTECODE=1 $$py tests/cpython/translate_all.py \
	    --min-pass 0.95 --min-transformed 0.70 $(CPYTHON_TRANSLATE_ALL_MODULES); \
	done

test-kernel: $(BUILD)/test-jupyter
	$(TEST_JUPYTER_ENV) $(PYTEST) tests/kernel

test-notebooks: $(BUILD)/test-jupyter
	$(TEST_JUPYTER_ENV) $(PYTEST) tests/notebooks

# playwright-core (npm, pinned by tests/browser/package-lock.json) in the build tree; it drives Debian's chromium.
$(BUILD)/browser/node_modules/.installed: tests/browser/package.json tests/browser/package-lock.json
	mkdir -p $(BUILD)/browser
	cp tests/browser/package.json tests/browser/package-lock.json $(BUILD)/browser/
	cd $(BUILD)/browser && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# Jupyter Notebook + headless Chromium run demo.ipynb; screenshots in $(BUILD)/screenshots/.
test-browser: $(BUILD)/test-jupyter $(BUILD)/browser/node_modules/.installed
	$(TEST_JUPYTER_ENV) $(PYTEST) tests/browser

# Installs the build tree's kernelspec into the user's Jupyter data dir (as `jupyter kernelspec install --user`).
kernelspec-install: build
	$(PY) -m jupyter_client.kernelspecapp install --user --name xsot $(BUILD)/share/jupyter/kernels/xsot

demo: build kernelspec-install
ifeq ($(SERVE),1)
	@echo "Open the URL printed below (Jupyter Notebook on 127.0.0.1, kernel 'Python 3 (xeus-sot)')."
	PYTHONPATH=$(CURDIR)/$(BUILD)/python $(PY) -m notebook --ip=127.0.0.1 --port=$(PORT) --no-browser \
	  --notebook-dir=$(CURDIR)/notebooks $(if $(filter 0,$(shell id -u)),--allow-root)
else
	mkdir -p $(BUILD)/demo
	PYTHONPATH=$(CURDIR)/$(BUILD)/python $(PY) -m nbconvert --to notebook --execute \
	  --ExecutePreprocessor.kernel_name=xsot --ExecutePreprocessor.timeout=600 \
	  --output-dir $(BUILD)/demo --output demo.ipynb notebooks/demo.ipynb
	$(PY) -m nbconvert --to html --output-dir $(BUILD)/demo --output demo.html $(BUILD)/demo/demo.ipynb
	@echo "demo: executed notebook and HTML rendering in $(BUILD)/demo/"
endif

# Benchmarks (Google Benchmark), reported as times and ratios against a baseline measured in the same run.
bench: build
	$(BUILD)/tests/bench_bytecode --benchmark_min_time=0.5
	$(BUILD)/tests/bench_capture --benchmark_min_time=0.5
	PYTHONPATH=$(CURDIR)/$(BUILD)/python $(PY) tests/bench/bench_translate.py
	PYTHONPATH=$(CURDIR)/$(BUILD)/python $(PY) tests/bench/bench_numpy.py
	PYTHONPATH=$(CURDIR)/$(BUILD)/python $(PY) tests/bench/bench_report.py

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
	cmake -S . -B $(ASAN_BUILD) -G Ninja -DPython_EXECUTABLE=$(PY) -DSOT_SANITIZE=ON -DSOT_BUILD_KERNEL=OFF \
	  -DSOT_BUILD_BENCHMARKS=OFF -DSOT_WERROR=$(WERROR)
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=0 ctest --output-on-failure
	$(ASAN_ENV) $(PY) -m pytest -c tests/pytest.ini tests/python
	$(ASAN_ENV) $(PY) tests/cpython/capture_roundtrip.py test_generators test_frame test_scope test_with
	$(ASAN_ENV) $(PY) tests/cpython/translate_all.py test_scope test_with test_raise

CXX_SOURCES = $(shell git ls-files '*.cpp' '*.hpp')

format:
	clang-format -i $(CXX_SOURCES)

format-check:
	clang-format --dry-run --Werror $(CXX_SOURCES)

tidy: build
	clang-tidy -p $(BUILD) --quiet $(filter %.cpp,$(CXX_SOURCES))

clean:
	rm -rf $(BUILD)
