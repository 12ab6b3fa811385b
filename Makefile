# Everything runs from a virtual environment this Makefile creates: nothing relies on
# what happens to be installed on the machine.
#
# The interpreter it is made from: the distribution's packaged CPython 3.11 when it has venv
# and its headers (Debian's python3.11, python3.11-venv, python3.11-dev), else python3. A
# distribution's build is optimised with profiling and link-time optimisation and links
# libpython into the executable; a pyenv build by default is neither, and the broker's
# Python takes up to a third more CPU on it (docs/scaling.md, "The interpreter's build").
# PYTHON=... overrides.
SYSTEM_PYTHON := /usr/bin/python3.11
ifeq ($(origin PYTHON),undefined)
# Chosen once (`:=`), not at each use in the recipes.
PYTHON := $(shell $(SYSTEM_PYTHON) -c 'import ensurepip, os, sysconfig, sys; \
	sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' \
	2>/dev/null && echo $(SYSTEM_PYTHON) || echo python3)
endif
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
LAYOUT ?= single
# Suites too heavy for every run: `make test-all` runs them too.
PYTEST_MARKS ?= not slow
# Run again with every native extension off (ROCKETMQ_TRIO_PURE=1), so the pure-Python twins
# are held to the same behaviour on every run: the unit and property suites and the
# integration tests of the servers the extensions live in (the codec and sender in remoting,
# the store in broker, the NameServer over them, and HA, which copies the store's bytes). The
# client, CLI, deploy, console, metrics, plugin, proxy, pop and Spark suites, interop, faults
# and fuzz drive those same paths at several times the cost and run native only
# (tests/README.md, "Running").
PURE_PATHS ?= tests/unit tests/property tests/integration/broker tests/integration/remoting \
	tests/integration/namesrv tests/integration/ha

# Bytecode caches for every interpreter a run or a test run starts, under the venv, even
# when the environment sets PYTHONDONTWRITEBYTECODE (the machines this project's runs were
# measured on do): the suite starts hundreds of mqbroker, mqnamesrv and mqadmin processes
# (integration/client alone 189, integration/broker 132 in each mode), and without a cache
# each one compiled our ~250 modules from source again, a third of its start-up CPU
# (tests/README.md, "The suite's own cost"). `make run` and `make bench` start the same
# processes. The prefix keeps the source tree free of __pycache__ directories.
CACHE_ENV = PYTHONDONTWRITEBYTECODE= PYTHONPYCACHEPREFIX=$(CURDIR)/$(VENV)/pycache

# Test worker processes (pytest-xdist; 0: one process). Each test module runs whole in one
# worker (--dist loadscope), so a module's shared cluster starts once.
PYTEST_WORKERS ?= 2
XDIST = -n $(PYTEST_WORKERS) $(if $(filter 0,$(PYTEST_WORKERS)),,--dist loadscope)

# The long fuzz campaign (tests/fuzz): `make fuzz FUZZ_MINUTES=30 FUZZ_SEED=7 [FUZZ_DIR=...]`.
FUZZ_MINUTES ?= 30
FUZZ_SEED ?= 1

.PHONY: run test test-native test-pure test-all bench lint clean install reconcile reconcile-zip fuzz

install: $(STAMP)

NATIVE := $(wildcard remoting/native/*.h remoting/native/*/*.[ch] broker/store/native/*.[ch])

SDK5 := .venv-sdk5

$(STAMP): pyproject.toml setup.py $(NATIVE) proxy/build_protos.py tests/integration/proxy/sdk5-requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	@# The store's body CRC uses libdeflate's (PCLMUL) when its header is there (setup.py), else
	@# zlib's: install Debian's libdeflate-dev before the build when missing and we may.
	@[ -e /usr/include/libdeflate.h ] || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	  apt-get update -qq && apt-get install -y -qq --no-install-recommends libdeflate-dev >/dev/null; } || \
	  echo "note: no libdeflate-dev: the store's body CRC uses zlib's (slower)"
	@# Each native module is optional (setup.py): one that fails to compile is skipped quietly.
	@# Old builds are removed first, so that such a failure leaves no module rather than the last
	@# one, and tests/unit/test_native_modules.py says so instead of an old build running.
	rm -f remoting/_codec.*.so remoting/_sender.*.so broker/store/_native.*.so
	$(BIN)/pip install --quiet -e '.[test,dev,spark]'
	@# mqproxy's apache.rocketmq.v2 modules, generated from the .proto files Apache publishes
	@# (npm; proxy/build_protos.py says which and why). npm comes from Debian when missing.
	@command -v npm >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	  apt-get update -qq && apt-get install -y -qq --no-install-recommends npm >/dev/null; } || true
	$(BIN)/python -m proxy.build_protos
	@# The official RocketMQ 5 Python SDK, pinned, in an environment of its own: its package
	@# name 'rocketmq' is also the C++ client's (tests/interop). tests/integration/proxy runs it.
	$(PYTHON) -m venv $(SDK5)
	$(SDK5)/bin/pip install --quiet -r tests/integration/proxy/sdk5-requirements.txt
	@# Spark needs Java 17+: install Debian's JRE when it is missing and we may (else the
	@# Spark tests skip, saying why).
	@command -v java >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	  apt-get update -qq && apt-get install -y -qq openjdk-17-jre-headless >/dev/null; } || \
	  echo "note: no Java found: the Spark job and its tests need openjdk-17-jre-headless"
	@# The alert-rule tests run Debian's Prometheus and promtool (else they skip, saying why).
	@command -v promtool >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	  apt-get update -qq && apt-get install -y -qq --no-install-recommends prometheus >/dev/null; } || \
	  echo "note: no promtool found: the alert-rule tests need Debian's prometheus package"
	@# The console's browser tests drive Debian's chromium through Playwright (which downloads
	@# no browser of its own): install it when missing and we may (else those tests skip).
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	  apt-get update -qq && apt-get install -y -qq chromium >/dev/null; } || \
	  echo "note: no chromium found: the console's browser tests need Debian's chromium"
	@# Auto-failover (broker/election/) keeps its state in etcd: Debian's etcd-server and
	@# etcd-client (etcdctl) when missing and we may (else those tests skip, saying why).
	@command -v etcd >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	  apt-get update -qq && apt-get install -y -qq etcd-server etcd-client >/dev/null; } || \
	  echo "note: no etcd found: the auto-failover tests need Debian's etcd-server"
	touch $(STAMP)

run: $(STAMP)
	$(CACHE_ENV) $(BIN)/python -m deploy.mqcluster up deploy/$(LAYOUT) --foreground

test: test-native test-pure

# --durations: CI's output shows where the suite's time goes (it must stay within 15 min).
test-native: $(STAMP)
	$(CACHE_ENV) $(BIN)/python -m pytest -m "$(PYTEST_MARKS)" $(XDIST) --durations=30

test-pure: $(STAMP)
	$(CACHE_ENV) ROCKETMQ_TRIO_PURE=1 $(BIN)/python -m pytest -m "$(PYTEST_MARKS)" $(XDIST) --durations=15 $(PURE_PATHS)

test-all: $(STAMP)
	$(CACHE_ENV) $(BIN)/python -m pytest $(XDIST)

fuzz: $(STAMP)
	$(BIN)/python -m tests.fuzz --minutes $(FUZZ_MINUTES) --seed $(FUZZ_SEED) $(if $(FUZZ_DIR),--dir $(FUZZ_DIR))

bench: $(STAMP)
	$(CACHE_ENV) $(BIN)/python -m bench

# make reconcile MASTER_BACKUP=/backups/commitlog SLAVE_STORE=/data/slave-store OUT=/tmp/reconcile
#   [SPARK_MASTER=spark://host:7077]  (a cluster: the backup at the same path, or a file:// URI,
#   on every worker; the driver ships the job's code to the executors itself)
# make reconcile-zip: the job's code for spark-submit --py-files (build/rocketmq-trio-job.zip)
reconcile: $(STAMP)
	$(BIN)/python -m ops.spark run --backup $(MASTER_BACKUP) --slave-store $(SLAVE_STORE) \
	  --out $(OUT) $(if $(SPARK_MASTER),--master $(SPARK_MASTER))

reconcile-zip: $(STAMP)
	@mkdir -p build
	$(BIN)/python -m ops.spark.package build/rocketmq-trio-job.zip

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

clean:
	rm -rf $(VENV) $(SDK5) proxy/apis build *.egg-info .pytest_cache .ruff_cache .hypothesis
	rm -f remoting/_codec.*.so remoting/_sender.*.so broker/store/_native.*.so remoting/_speedups.*.so
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
