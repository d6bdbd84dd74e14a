# The two commands of the README: `make demo` and `make test` (plus `make server`, `make bench`).
# Each installs what is missing first, by the tool actually needed (Debian's chromium-headless-shell
# and chromium, the terminal emulators and X tools of the UI's real-terminal tests, the Python venvs
# for the interop tests, Docker's daemon for the image's tests, the C compiler cargo links with...)
# or says exactly what to run. tests/python/test_install.py runs every install step with its tool
# hidden from PATH and a stand-in apt-get.

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
# Where the install steps look for the tools they need: PATH, and the sbin folders a user's PATH may
# lack (Debian puts dockerd and haproxy there).
TOOL_PATH ?= $(PATH):/usr/local/sbin:/usr/sbin:/sbin
# An install step: scripts/apt-install.sh WHAT TOOL=PACKAGE..., which installs the package of each
# missing tool with apt-get (sudo when not root), or prints the command to run.
APT_INSTALL = SUDO="$(SUDO)" TOOL_PATH="$(TOOL_PATH)" scripts/apt-install.sh
# The server's Docker image (`make image`); tests/python/test_image.py runs it (BROWSERENV_IMAGE).
IMAGE ?= browserenv:latest
# The Dockerfile's runtime stage (Debian, Chromium's headless shell, fonts, the user; no server):
# `make image` puts the server it builds on the host onto it.
RUNTIME_IMAGE ?= browserenv-runtime:latest
# Extra `docker build` arguments (e.g. --network=host; `make image` adds that by itself when a
# container on Docker's bridge cannot reach Debian's mirror).
DOCKER_BUILD_ARGS ?=
# Where the Docker daemon `make docker` starts (when none answers) writes its log.
DOCKERD_LOG ?= /var/log/dockerd.log

.PHONY: demo server miniwob test bench check chromium seedtools terminals venv python-venv deploytools docker toolchain image archivetools replayweb

## The terminal UI on an embedded server and the bundled offline demo site.
demo: chromium toolchain
	cargo run --release -p browserenv-tui -- $(ARGS)

## Start the server on 127.0.0.1:$(PORT), with the test pages on a port of their own.
server: chromium toolchain
	cargo run --release -p browserenv-server -- --port $(PORT) --site assets/pages

## MiniWoB++'s 125 tasks on a server at 127.0.0.1:$(PORT): the pages of the `miniwob` package the venv
## installs (tests/python/requirements.txt), its `html` folder given as --miniwob DIR;
## reset(task_id="miniwob.click-test", seed=N) (docs/tasks.md, "MiniWoB++").
MINIWOB_DIR = $$($(VENV)/bin/python -c 'import miniwob, pathlib; print(pathlib.Path(miniwob.__file__).parent / "html")')
miniwob: chromium toolchain venv
	cargo run --release -p browserenv-server -- --port $(PORT) --miniwob "$(MINIWOB_DIR)"

## Everything: formatting, lints, Rust unit + end-to-end tests on real Chromium, the UI in real
## terminals (xterm, kitty, tmux under Xvfb), Python interop, the Docker image.
## The image (`make image`: its runtime stage, and the server built in release on the host) is made
## in the background while the Rust checks and the Python tests that need no image run, its log in
## target/image.log: at idle priority (nice 19, for its session's autogroup too, which the kernel
## weighs against the others first), so it takes the CPU the debug build, the browsers and the
## waits leave. pytest runs the image's tests (tests/python/test_image*.py) once it is there, and
## the others before with BROWSERENV_IMAGE naming no image, so that none of them can use an image
## left from an earlier run; while it waits, the image's build gets normal priority back (where
## make runs as root: others may not raise a priority). A failed step, or Ctrl-C, stops the image's
## build too.
## The Python venvs are made beside the formatting and lint checks (mostly downloads: 77 s of a
## clean clone's run, now under clippy's 100), their log in target/venv.log.
## The perf smoke (tests/tests/perf_smoke.rs, a click against its raw-CDP floor) runs first, on
## its own: no other end-to-end test beside it.
## Four Rust tests at a time: each end-to-end test runs its own Chromium, and on two cores more in
## parallel only adds contention (same wall time, slower steps, closer to the timeouts); `cargo
## test` also builds target/debug/browserenv-server for the Python tests.
test: chromium terminals deploytools docker toolchain archivetools replayweb
	@set -e; mkdir -p target; \
	echo "make image: in the background at idle priority, its log in target/image.log"; \
	setsid sh -c 'echo 19 >/proc/self/autogroup 2>/dev/null; exec nice -n 19 "$$@"' sh \
	  $(MAKE) --no-print-directory image >target/image.log 2>&1 </dev/null & image=$$!; \
	echo "make venv: beside the lint, its log in target/venv.log"; \
	$(MAKE) --no-print-directory venv >target/venv.log 2>&1 </dev/null & venv=$$!; \
	trap 'kill -TERM -$$image 2>/dev/null || true; kill $$venv 2>/dev/null || true' EXIT; \
	trap 'exit 130' INT TERM; \
	times=""; run() { echo "$$*"; t=$$(date +%s); "$$@"; times="$$times  $$(( $$(date +%s) - t )) s: $$*\n"; }; \
	run cargo fmt --all -- --check; \
	run cargo clippy --workspace --all-targets -- -D warnings; \
	t=$$(date +%s); wait $$venv || { echo "make venv failed; the end of target/venv.log:"; \
	  tail -n 40 target/venv.log; exit 1; }; \
	times="$$times  $$(( $$(date +%s) - t )) s: waiting for make venv\n"; \
	run $(VENV)/bin/python -m pytest -q -p no:cacheprovider tests/python/test_install.py; \
	run cargo test --workspace --test perf_smoke -- --ignored; \
	run cargo test --workspace -- --test-threads 4; \
	run env BROWSERENV_IMAGE=browserenv-image-not-built-yet MCP2_PYTHON=$(MCP2_VENV)/bin/python \
	  $(VENV)/bin/python -m pytest tests/python -q \
	  --ignore=tests/python/test_install.py --ignore-glob='*/test_image*.py'; \
	echo "Waiting for make image (target/image.log), at normal priority from now on"; t=$$(date +%s); \
	{ echo 0 >/proc/$$image/autogroup && renice -n 0 -g $$image; } >/dev/null 2>&1 || true; \
	wait $$image || { status=$$?; echo "make image failed ($$status); the end of target/image.log:"; \
	  tail -n 40 target/image.log; exit 1; }; \
	trap - EXIT; \
	times="$$times  $$(( $$(date +%s) - t )) s: waiting for make image\n"; \
	grep '^image: ' target/image.log | tail -n 1; \
	run env BROWSERENV_IMAGE=$(IMAGE) MCP2_PYTHON=$(MCP2_VENV)/bin/python \
	  $(VENV)/bin/python -m pytest -q tests/python/test_image*.py; \
	printf 'make test: where the time went\n%b' "$$times"; \
	sed -n 's/^image: /  make image (in the background): /p' target/image.log

## The server's image, $(IMAGE): the Dockerfile's runtime stage (`docker build --target runtime`,
## Debian with Chromium's headless shell) and the server built on the host (`cargo build --release`,
## the same build `make server` runs, stripped; the host is Debian bookworm like the image, and the
## build checks the binary runs there), the two at the same time. Where the binary does not run
## there (another Debian, a newer glibc), the whole Dockerfile is built: what a plain
## `docker build .` does, the server compiled inside. Where no registry answers,
## deploy/docker/base-images.sh first makes local stand-ins for the FROM lines' images (for the
## runtime stage only: debian:bookworm-slim).
image: docker toolchain
	@set -e; start=$$(date +%s); \
	run() { echo "$$*"; "$$@"; }; \
	echo "cargo build --release --locked -p browserenv-server  (meanwhile, the runtime stage)"; \
	cargo build --release --locked -p browserenv-server & cargo=$$!; \
	trap 'kill $$cargo 2>/dev/null || true' EXIT; \
	run deploy/docker/base-images.sh --target runtime Dockerfile; \
	network="$(DOCKER_BUILD_ARGS)"; \
	if ! timeout 60 docker run --rm --network bridge debian:bookworm-slim \
	    bash -c 'exec 3<>/dev/tcp/deb.debian.org/80' 2>/dev/null; then \
	  echo "A container on Docker's bridge cannot reach deb.debian.org:80: building with --network=host"; \
	  network="$$network --network=host"; \
	fi; \
	run docker build $$network --target runtime -t $(RUNTIME_IMAGE) .; \
	echo "image: stand-in bases and the runtime stage $(RUNTIME_IMAGE) in $$(( $$(date +%s) - start )) s"; \
	wait $$cargo || { echo "cargo build --release failed"; exit 1; }; \
	trap - EXIT; \
	echo "image: cargo build --release done after $$(( $$(date +%s) - start )) s"; \
	mkdir -p target/image; \
	run strip -o target/image/browserenv-server target/release/browserenv-server; \
	if ! run docker build -t $(IMAGE) --build-arg RUNTIME=$(RUNTIME_IMAGE) \
	    -f deploy/docker/prebuilt.Dockerfile target/image; then \
	  echo "The host's server does not run on the image's Debian: building the whole Dockerfile"; \
	  run deploy/docker/base-images.sh Dockerfile; \
	  run docker build $$network -t $(IMAGE) .; \
	fi; \
	echo "image: $(IMAGE) built in $$(( $$(date +%s) - start )) s: $$(docker image ls --format '{{.Size}}' $(IMAGE))"

## Docker: Debian's docker.io when its daemon (dockerd) or its command line is missing (the command
## line alone does not run anything); the daemon started (logging to $(DOCKERD_LOG)) when none
## answers.
docker:
	@$(APT_INSTALL) "the image and its tests" dockerd=docker.io docker=docker.io
	@if ! docker info >/dev/null 2>&1; then \
	  dockerd=$$(PATH="$(TOOL_PATH)"; command -v dockerd) || { echo "No dockerd, even after installing docker.io"; exit 1; }; \
	  echo "No Docker daemon answers: starting $$dockerd (log: $(DOCKERD_LOG))"; \
	  pid=$$($(SUDO) sh -c 'setsid "$$0" >>"$(DOCKERD_LOG)" 2>&1 < /dev/null & echo $$!' "$$dockerd"); \
	  for i in $$(seq 60); do docker info >/dev/null 2>&1 && break; [ -d /proc/$$pid ] || break; sleep 1; done; \
	  docker info >/dev/null 2>&1 || { \
	    if [ -d /proc/$$pid ]; then echo "dockerd (pid $$pid) did not answer within 60 s; the end of $(DOCKERD_LOG):"; \
	    else echo "dockerd exited; the end of $(DOCKERD_LOG):"; fi; \
	    $(SUDO) tail -n 20 "$(DOCKERD_LOG)"; exit 1; }; \
	  echo "dockerd is up (pid $$pid)"; \
	fi

## Latency, size and memory figures (docs/benchmark.md); the replicas part runs HAProxy and the
## image (its cold start); the seed's stand-in (the throughput's reference) drives a full Chromium
## with Selenium's chromedriver on a display of its own and clicks with xdotool.
bench: chromium venv deploytools image seedtools
	cargo run --release -p browserenv-tests --bin browserenv-bench

## The quick check, no Chromium started (under 3 minutes after a build): formatting, lints, every
## unit test, the server's tests on the fake browser, the UI's offline tests, the docs' references.
## One `cargo test` over the workspace, so it builds what `make test` builds (the same features).
check: toolchain
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings
	# `replay` runs the server embedded, with its Chromium: that one test of reports.rs is skipped.
	cargo test --workspace --lib --bins \
	  --test access --test drain --test limits --test protocol --test replicas --test task_api \
	  --test campaign_routes \
	  --test recordings --test reports --test screens --test docs \
	  -- --skip replay_prints_no_escape_sequence_from_a_recording

chromium:
	@$(APT_INSTALL) "the browser" $(CHROMIUM)=chromium-headless-shell $(FULL_CHROMIUM)=chromium

seedtools: chromium
	@$(APT_INSTALL) "the seed's stand-in (make bench)" chromedriver=chromium-driver xvfb-run=xvfb xdotool=xdotool

## The UI's terminal tests run xterm (sixel) and kitty under Xvfb, screenshot them with
## ImageMagick, click with xdotool, and read tmux's screen; the terminals draw with DejaVu Sans Mono.
DEJAVU ?= /usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf
TERMINAL_TOOLS := Xvfb=xvfb xterm=xterm kitty=kitty import=imagemagick xdotool=xdotool tmux=tmux \
  $(DEJAVU)=fonts-dejavu-core
terminals:
	@$(APT_INSTALL) "the terminal tests" $(TERMINAL_TOOLS)

## cargo (rustup's: Debian's is older than the workspace's rust-version), and what it and the tests
## run: the C compiler and libc files it links with (gcc, libc6-dev), strip (`make image`), openssl
## (the end-to-end tests' self-signed HTTPS pages).
LIBC_DEV ?= /usr/include/stdio.h
toolchain:
	@command -v cargo >/dev/null || { echo "No cargo: install Rust with rustup (https://rustup.rs)"; exit 1; }
	@$(APT_INSTALL) "cargo and the Rust tests" cc=gcc $(LIBC_DEV)=libc6-dev strip=binutils openssl=openssl

## The deployment files' checks (tests/python/test_deploy.py) run HAProxy (`haproxy -c`, and the
## balancer itself in front of stub replicas) and `docker compose config`, or Debian's
## docker-compose where the Docker CLI has no compose plugin. Without recommends: docker-compose
## would bring the Docker engine, which `config` does not need.
deploytools:
	@compose=docker-compose=docker-compose; docker compose version >/dev/null 2>&1 && compose=; \
	$(APT_INSTALL) "the deployment tests" --no-install-recommends haproxy=haproxy $$compose

## The archive tests capture the demo site with Debian's wget (--warc-file) and open a WACZ in
## ReplayWeb.page, an npm package (tests/python/test_foreign_archives.py, test_wacz.py): wget, and
## npm to install ReplayWeb.page.
archivetools:
	@$(APT_INSTALL) "the archive tests" wget=wget npm=npm

## ReplayWeb.page (npm `replaywebpage`) as its lock file pins it, into tests/replayweb/node_modules
## (not kept in git).
REPLAYWEB := tests/replayweb
replayweb: $(REPLAYWEB)/node_modules/.installed
$(REPLAYWEB)/node_modules/.installed: $(REPLAYWEB)/package.json $(REPLAYWEB)/package-lock.json | archivetools
	npm ci --prefix $(REPLAYWEB) --no-audit --no-fund --ignore-scripts
	touch $@

venv: $(VENV)/.installed $(MCP2_VENV)/.installed

## `python3 -m venv` needs python3 and, on Debian, python3-venv (ensurepip).
python-venv:
	@python3 -c 'import ensurepip, venv' 2>/dev/null || \
	$(APT_INSTALL) "the Python tests' venvs (python3 -m venv)" python3 python3-venv

$(VENV)/.installed: tests/python/requirements.txt | python-venv
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q -r tests/python/requirements.txt
	touch $@

# The newest MCP SDK cannot share the venv with fastmcp (it pins mcp 1.x): a venv of its own.
$(MCP2_VENV)/.installed: tests/python/requirements-mcp2.txt $(VENV)/.installed | python-venv
	python3 -m venv $(MCP2_VENV)
	$(MCP2_VENV)/bin/pip install -q -r tests/python/requirements-mcp2.txt
	touch $@

## The README's pictures of the UI, docs/images/tui-{xterm,tmux}.png: scripts/pictures.sh in xterm and tmux under Xvfb.
.PHONY: pictures
pictures: chromium terminals toolchain
	BROWSER_CHROMIUM=$(CHROMIUM) scripts/pictures.sh
