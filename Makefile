# The two commands of the README: `make demo` and `make test` (plus `make server`, `make bench`).
# Each installs what is missing first (Debian's chromium-headless-shell and chromium, the terminal emulators and X tools of the
# UI's real-terminal tests, the Python venv for the interop tests) or says exactly what to run.

# Chromium's headless shell (Debian's chromium-headless-shell): what the server launches when it is
# installed. A context and its tab open in 15 ms instead of 200 with the full browser.
CHROMIUM ?= /usr/lib/chromium/chromium-headless-shell
# The full browser too: the tests run a remote browser and the back/forward cache on it, which the
# headless shell does not have.
FULL_CHROMIUM ?= /usr/bin/chromium
VENV ?= .venv
MCP2_VENV ?= .venv-mcp2
PORT ?= 8000
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: demo server test bench check chromium terminals venv

## The terminal UI on an embedded server and the bundled offline demo site.
demo: chromium
	cargo run --release -p browserenv-tui -- $(ARGS)

## Start the server on 127.0.0.1:$(PORT), with the test pages on a port of their own.
server: chromium
	cargo run --release -p browserenv-server -- --port $(PORT) --site assets/pages

## Everything: formatting, lints, Rust unit + end-to-end tests on real Chromium, the UI in real
## terminals (xterm, kitty, tmux under Xvfb), Python interop.
test: chromium terminals venv
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings
	# Four tests at a time: each end-to-end test runs its own Chromium, and on two cores more in
	# parallel only adds contention (same wall time, slower steps, closer to the timeouts).
	cargo test --workspace -- --test-threads 4  # also builds target/debug/browserenv-server for the Python tests
	MCP2_PYTHON=$(MCP2_VENV)/bin/python $(VENV)/bin/python -m pytest tests/python -q

## Latency, size and memory figures (the README's table).
bench: chromium
	cargo run --release -p browserenv-tests --bin browserenv-bench

check:
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings

chromium:
	@if [ ! -x "$(CHROMIUM)" ] || [ ! -x "$(FULL_CHROMIUM)" ]; then \
	  echo "Chromium is missing: installing Debian's chromium-headless-shell and chromium packages"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium-headless-shell chromium \
	  || { echo "Could not install them. Run: sudo apt-get install chromium-headless-shell chromium"; exit 1; }; \
	fi

## The UI's terminal tests run xterm (sixel) and kitty under Xvfb, screenshot them with
## ImageMagick, click with xdotool, and read tmux's screen.
TERMINAL_TOOLS := Xvfb xterm kitty import xdotool tmux
TERMINAL_PACKAGES := xvfb xterm kitty imagemagick xdotool tmux fonts-dejavu-core
terminals:
	@missing=""; for tool in $(TERMINAL_TOOLS); do command -v $$tool >/dev/null || missing="$$missing $$tool"; done; \
	if [ -n "$$missing" ]; then \
	  echo "Missing for the terminal tests:$$missing; installing $(TERMINAL_PACKAGES)"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $(TERMINAL_PACKAGES) \
	  || { echo "Could not install them. Run: sudo apt-get install $(TERMINAL_PACKAGES)"; exit 1; }; \
	fi

venv: $(VENV)/.installed $(MCP2_VENV)/.installed

$(VENV)/.installed: tests/python/requirements.txt
	@python3 -m venv $(VENV) 2>/dev/null || { \
	  echo "python3 -m venv failed: installing python3-venv"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq python3-venv \
	  && python3 -m venv $(VENV); } \
	  || { echo "Could not create the venv. Run: sudo apt-get install python3-venv"; exit 1; }
	$(VENV)/bin/pip install -q -r tests/python/requirements.txt
	touch $@

# The newest MCP SDK cannot share the venv with fastmcp (it pins mcp 1.x): a venv of its own.
$(MCP2_VENV)/.installed: tests/python/requirements-mcp2.txt $(VENV)/.installed
	python3 -m venv $(MCP2_VENV)
	$(MCP2_VENV)/bin/pip install -q -r tests/python/requirements-mcp2.txt
	touch $@
