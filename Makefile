# The two commands of the README: `make demo` and `make test` (plus `make server`, `make bench`).
# Each installs what is missing first (Debian's chromium-headless-shell and chromium, the terminal emulators and X tools of the
# UI's real-terminal tests, the Python venv for the interop tests, Docker and its daemon for the
# image's tests) or says exactly what to run.

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
# The server's Docker image (`make image`); tests/python/test_image.py runs it (BROWSERENV_IMAGE).
IMAGE ?= browserenv:latest
# Extra `docker build` arguments (e.g. --network=host; `make image` adds that by itself when a
# container on Docker's bridge cannot reach Debian's mirror).
DOCKER_BUILD_ARGS ?=
# Where the Docker daemon `make docker` starts (when none answers) writes its log.
DOCKERD_LOG ?= /var/log/dockerd.log

.PHONY: demo server test bench check chromium terminals venv docker image

## The terminal UI on an embedded server and the bundled offline demo site.
demo: chromium
	cargo run --release -p browserenv-tui -- $(ARGS)

## Start the server on 127.0.0.1:$(PORT), with the test pages on a port of their own.
server: chromium
	cargo run --release -p browserenv-server -- --port $(PORT) --site assets/pages

## Everything: formatting, lints, Rust unit + end-to-end tests on real Chromium, the UI in real
## terminals (xterm, kitty, tmux under Xvfb), Python interop, the Docker image (built once, first).
test: chromium terminals venv deploytools image
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings
	# Four tests at a time: each end-to-end test runs its own Chromium, and on two cores more in
	# parallel only adds contention (same wall time, slower steps, closer to the timeouts).
	cargo test --workspace -- --test-threads 4  # also builds target/debug/browserenv-server for the Python tests
	BROWSERENV_IMAGE=$(IMAGE) MCP2_PYTHON=$(MCP2_VENV)/bin/python $(VENV)/bin/python -m pytest tests/python -q

## The server's image: $(IMAGE), from the Dockerfile with a plain `docker build`. Where no registry
## answers, deploy/docker/base-images.sh first makes local stand-ins for the FROM lines' images.
image: docker
	deploy/docker/base-images.sh Dockerfile
	@network="$(DOCKER_BUILD_ARGS)"; \
	if ! timeout 60 docker run --rm --network bridge debian:bookworm-slim \
	    bash -c 'exec 3<>/dev/tcp/deb.debian.org/80' 2>/dev/null; then \
	  echo "A container on Docker's bridge cannot reach deb.debian.org:80: building with --network=host"; \
	  network="$$network --network=host"; \
	fi; \
	echo "docker build $$network -t $(IMAGE) ."; \
	start=$$(date +%s); \
	docker build $$network -t $(IMAGE) . && \
	echo "$(IMAGE) built in $$(( $$(date +%s) - start )) s: $$(docker image ls --format '{{.Size}}' $(IMAGE))"

## Docker: Debian's docker.io when there is no docker command; a daemon (dockerd, logging to
## $(DOCKERD_LOG)) when none answers.
docker:
	@if ! command -v docker >/dev/null; then \
	  echo "Docker is missing: installing Debian's docker.io"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq docker.io \
	  || { echo "Could not install it. Run: sudo apt-get install docker.io"; exit 1; }; \
	fi
	@if ! docker info >/dev/null 2>&1; then \
	  command -v dockerd >/dev/null || { echo "No Docker daemon answers and there is no dockerd to start: sudo apt-get install docker.io"; exit 1; }; \
	  echo "No Docker daemon answers: starting dockerd (log: $(DOCKERD_LOG))"; \
	  pid=$$($(SUDO) sh -c 'setsid dockerd >>"$(DOCKERD_LOG)" 2>&1 < /dev/null & echo $$!'); \
	  for i in $$(seq 60); do docker info >/dev/null 2>&1 && break; [ -d /proc/$$pid ] || break; sleep 1; done; \
	  docker info >/dev/null 2>&1 || { \
	    if [ -d /proc/$$pid ]; then echo "dockerd (pid $$pid) did not answer within 60 s; the end of $(DOCKERD_LOG):"; \
	    else echo "dockerd exited; the end of $(DOCKERD_LOG):"; fi; \
	    $(SUDO) tail -n 20 "$(DOCKERD_LOG)"; exit 1; }; \
	  echo "dockerd is up (pid $$pid)"; \
	fi

## Latency, size and memory figures (docs/benchmark.md); the replicas part runs HAProxy and the
## image (its cold start).
bench: chromium venv deploytools image
	cargo run --release -p browserenv-tests --bin browserenv-bench

## The quick check, no Chromium started (under 3 minutes after a build): formatting, lints, every
## unit test, the server's tests on the fake browser, the UI's offline tests, the docs' references.
## One `cargo test` over the workspace, so it builds what `make test` builds (the same features).
check:
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings
	# `replay` runs the server embedded, with its Chromium: that one test of reports.rs is skipped.
	cargo test --workspace --lib --bins \
	  --test access --test drain --test limits --test protocol --test replicas --test task_api \
	  --test campaign_routes \
	  --test recordings --test reports --test screens --test docs \
	  -- --skip replay_prints_no_escape_sequence_from_a_recording

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

## The deployment files' checks (tests/python/test_deploy.py) run HAProxy (`haproxy -c`, and the
## balancer itself in front of stub replicas) and `docker compose config`, or Debian's
## docker-compose where the Docker CLI has no compose plugin. Without recommends: docker-compose
## would bring the Docker engine, which `config` does not need.
.PHONY: deploytools
deploytools:
	@missing=""; [ -x /usr/sbin/haproxy ] || command -v haproxy >/dev/null || missing="$$missing haproxy"; \
	docker compose version >/dev/null 2>&1 || command -v docker-compose >/dev/null || missing="$$missing docker-compose"; \
	if [ -n "$$missing" ]; then \
	  echo "Missing for the deployment tests:$$missing; installing them"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing \
	  || { echo "Could not install them. Run: sudo apt-get install$$missing"; exit 1; }; \
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

## The README's pictures of the UI, docs/images/tui-{xterm,tmux}.png: scripts/pictures.sh in xterm and tmux under Xvfb.
.PHONY: pictures
pictures: chromium terminals
	BROWSER_CHROMIUM=$(CHROMIUM) scripts/pictures.sh
