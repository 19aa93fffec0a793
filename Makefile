# iofleet — set-up and everyday commands. Everything the project needs is
# installed from here: fio from the distribution, Python packages into .venv.

PYTHON  ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
SUDO    := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
SCRATCH ?= $(CURDIR)/scratch
# Debian packages needed: fio (the engine), python3-venv (for .venv).
APT_PKGS := fio python3-venv

.PHONY: run test bench system clean

# Install what is missing from the distribution (fio >= 3.33, venv support).
system:
	@missing=""; \
	command -v fio >/dev/null 2>&1 || missing="$$missing fio"; \
	$(PYTHON) -c 'import ensurepip, venv' >/dev/null 2>&1 || missing="$$missing python3-venv"; \
	if [ -n "$$missing" ]; then \
	  echo "Installing from the distribution:$$missing"; \
	  $(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

# The main job: run the quick example plan on a scratch directory.
run: system $(STAMP)
	mkdir -p $(SCRATCH)
	$(BIN)/iofleet run examples/quick.yaml --target $(SCRATCH)

# The whole suite: unit tests, then real fio integration tests.
test: system $(STAMP)
	$(BIN)/pytest -q tests

# Performance measurements (not part of the tests); writes BENCHMARKS.md.
bench: system $(STAMP)
	mkdir -p $(SCRATCH)
	$(BIN)/python bench/overhead.py --target $(SCRATCH)

clean:
	rm -rf $(VENV) $(SCRATCH) iofleet-data test-artifacts
