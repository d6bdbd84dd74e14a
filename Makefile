# The two commands of the README: `make demo` and `make test` (plus `make server`, `make bench`).
# Each installs what is missing first (Debian's chromium, the Python venv for the interop tests)
# or says exactly what to run.

CHROMIUM ?= /usr/bin/chromium
VENV ?= .venv
PORT ?= 8000
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: demo server test bench check chromium venv

## The terminal UI on an embedded server and the bundled offline demo site.
demo: chromium
	cargo run --release -p browserenv-tui -- $(ARGS)

## Start the server on 127.0.0.1:$(PORT), with the test pages on a port of their own.
server: chromium
	cargo run --release -p browserenv-server -- --port $(PORT) --site assets/pages

## Everything: formatting, lints, Rust unit + end-to-end tests on real Chromium, Python interop.
test: chromium venv
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings
	# Four tests at a time: each end-to-end test runs its own Chromium, and on two cores more in
	# parallel only adds contention (same wall time, slower steps, closer to the timeouts).
	cargo test --workspace -- --test-threads 4  # also builds target/debug/browserenv-server for the Python tests
	$(VENV)/bin/python -m pytest tests/python -q

## Latency, size and memory figures (the README's table).
bench: chromium
	cargo run --release -p browserenv-tests --bin browserenv-bench

check:
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings

chromium:
	@if [ ! -x "$(CHROMIUM)" ]; then \
	  echo "Chromium is missing: installing Debian's chromium package"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium \
	  || { echo "Could not install it. Run: sudo apt-get install chromium"; exit 1; }; \
	fi

venv: $(VENV)/.installed

$(VENV)/.installed: tests/python/requirements.txt
	@python3 -m venv $(VENV) 2>/dev/null || { \
	  echo "python3 -m venv failed: installing python3-venv"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq python3-venv \
	  && python3 -m venv $(VENV); } \
	  || { echo "Could not create the venv. Run: sudo apt-get install python3-venv"; exit 1; }
	$(VENV)/bin/pip install -q -r tests/python/requirements.txt
	touch $@
