# The server image: a slim Debian with Chromium's headless shell (the runtime stage), and the Rust
# binary built in a stage of its own and copied onto it.
# Build: `make image` (the runtime stage and the server built on the host, which is Debian bookworm
# too: deploy/docker/prebuilt.Dockerfile), or a plain `docker build -t browserenv .`, which builds
# every stage here, the server compiled inside.
# Run: docker run -p 8000:8000 -e BROWSER_API_TOKEN=... IMAGE
#  (binding 0.0.0.0 needs a token, or BROWSER_INSECURE=1 behind a proxy that authenticates).
# What takes the space, and why it is built this way: deploy/docker/README.md.

# MiniWoB++'s task pages: the `html` folder of the `miniwob` package on PyPI (pip's download of
# its wheel, nothing else of it), for `server --miniwob /opt/browserenv/miniwob`
# (BROWSER_MINIWOB_DIR; docs/tasks.md, "MiniWoB++"). A stage of its own, so pip stays out of the
# image. Docker's classic builder (what these machines have; no BuildKit) builds every stage up to
# the one asked for, so `docker build --target runtime` builds this one and the runtime stage.
FROM debian:bookworm-slim AS miniwob
ARG MINIWOB_VERSION=1.1.0
RUN set -eux; \
    apt-get update; \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ca-certificates python3-pip; \
    python3 -m pip download --no-deps --cert /etc/ssl/certs/ca-certificates.crt --dest /tmp/wheel "miniwob==${MINIWOB_VERSION}"; \
    python3 -m zipfile -e /tmp/wheel/miniwob-*.whl /tmp/miniwob; \
    mv /tmp/miniwob/miniwob/html /opt/miniwob; \
    test -f /opt/miniwob/miniwob/click-test.html

FROM debian:bookworm-slim AS runtime
# Chromium's headless shell and the fonts pages get: DejaVu (sans-serif, serif and monospace; the
# test pages and the demo site ask for these and system-ui, and the CI machines draw sans-serif and
# serif with it too) and Liberation (2 MB: pages that ask for Arial, Helvetica, Times or Courier
# get faces of the same metrics, so text wraps as on the desktops the pages were made for);
# fontconfig caches them at build time, so no browser scans them (nor writes a cache under $HOME).
# The font folders' times are set to whole seconds first: an image layer keeps no nanoseconds, and
# fontconfig takes a cache whose folder time differs in them for stale.
# chromium-common (which the shell needs for ICU data, V8 snapshots and resources) Depends on
# x11-utils and xdg-utils, for the desktop browser: their X clients pull libgl1's Mesa DRI drivers
# and LLVM (about 200 MB) that the headless shell never loads. A local empty package that
# Provides both (built with dpkg-deb, as equivs does) keeps dpkg consistent without them; `ldd`
# then checks that every library the shell links is installed. The Vulkan validation layer
# (libVkLayer_khronos_validation, 23 MB, a debugging aid Chromium loads only when asked) is kept
# out with a dpkg path-exclude.
RUN set -eux; \
    mkdir -p /tmp/no-x11-tools/DEBIAN; \
    printf '%s\n' \
      'Package: browserenv-no-x11-tools' \
      'Version: 1' \
      'Architecture: all' \
      'Maintainer: browserenv <browserenv@localhost>' \
      'Priority: optional' \
      'Section: misc' \
      'Provides: x11-utils, xdg-utils' \
      'Description: x11-utils and xdg-utils, which the headless shell does not use' \
      " chromium-common depends on them for the desktop browser; this image runs" \
      " chromium-headless-shell only." \
      > /tmp/no-x11-tools/DEBIAN/control; \
    dpkg-deb --build /tmp/no-x11-tools /tmp/no-x11-tools.deb; \
    dpkg -i /tmp/no-x11-tools.deb; \
    echo 'path-exclude=/usr/lib/chromium/libVkLayer_khronos_validation.so*' \
      > /etc/dpkg/dpkg.cfg.d/browserenv-excludes; \
    apt-get update; \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      chromium-headless-shell ca-certificates fontconfig fonts-dejavu-core fonts-liberation; \
    rm -rf /var/lib/apt/lists/* /tmp/no-x11-tools /tmp/no-x11-tools.deb; \
    find /usr/share/fonts /usr/local/share/fonts -type d -exec touch -d "@$(date +%s)" {} +; \
    fc-cache -s -f; \
    if ldd /usr/lib/chromium/chromium-headless-shell | grep 'not found'; then exit 1; fi
# Not root, so Chromium's sandbox can run. It also needs user namespaces, which Docker's default
# seccomp profile forbids: `docker run --security-opt seccomp=unconfined ...` to get it; without
# that the server runs Chromium with --no-sandbox and says so at start (BROWSER_SANDBOX=off to
# accept it quietly, =on to refuse). The server is pid 1 and reaps Chromium's orphans itself.
RUN useradd --create-home --uid 10001 browserenv
COPY deploy/docker/healthcheck.sh /usr/local/bin/browserenv-healthcheck
COPY --chown=browserenv assets/site /opt/browserenv/site
COPY --chown=browserenv assets/tasks /opt/browserenv/tasks
COPY --from=miniwob /opt/miniwob /opt/browserenv/miniwob
# The server comes last (the final stage below, or deploy/docker/prebuilt.Dockerfile); `server` is
# what the HF Sandbox launcher (and OpenEnv's tooling) runs.
RUN ln -s /usr/local/bin/browserenv-server /usr/local/bin/server

# The seed's settings, with their defaults (the seed: docs/ARCHITECTURE.md, "Terms").
ENV BROWSER_MAX_STEPS=20 \
    BROWSER_ACTION_WAIT_SECONDS=1.5 \
    BROWSER_EXPLICIT_WAIT_SECONDS=3 \
    BROWSER_SETTLE=adaptive \
    BROWSER_HOST=0.0.0.0 \
    SBX_SERVICE_PORT=8000 \
    BROWSER_CHROMIUM=/usr/lib/chromium/chromium-headless-shell

USER browserenv
WORKDIR /home/browserenv
EXPOSE 8000
# bash's /dev/tcp, not curl (see deploy/docker/healthcheck.sh).
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["/usr/local/bin/browserenv-healthcheck"]
CMD ["server"]

FROM rust:1-slim-bookworm AS build
WORKDIR /src
# The dependencies first, in a layer of their own: the workspace's manifests and lock file with
# empty crates, so that a change to the sources alone does not compile them again.
COPY Cargo.toml Cargo.lock ./
COPY archive/Cargo.toml archive/Cargo.toml
COPY collect/Cargo.toml collect/Cargo.toml
COPY server/Cargo.toml server/Cargo.toml
COPY tui/Cargo.toml tui/Cargo.toml
COPY tests/Cargo.toml tests/Cargo.toml
RUN mkdir -p src archive/src collect/src server/src tui/src tests/src \
 && touch src/lib.rs archive/src/lib.rs collect/src/lib.rs server/src/lib.rs tui/src/lib.rs tests/src/lib.rs \
 && for main in server/src/main.rs tui/src/main.rs tests/src/bench.rs; do echo 'fn main() {}' > "$main"; done \
 && cargo build --release --locked -p browserenv-server \
 && rm -rf src archive/src collect/src server/src target/release/browserenv-server*
# Then the four crates the server is built from (the UI and the tests keep their empty stand-ins:
# the server does not depend on them). COPY keeps the files' times, which may be older than the
# stand-ins' build: touched, so that cargo builds them.
COPY src src
COPY archive archive
COPY collect collect
COPY server server
COPY README.md README.md
RUN touch src/lib.rs archive/src/lib.rs collect/src/lib.rs server/src/lib.rs server/src/main.rs \
 && cargo build --release --locked -p browserenv-server \
 && strip target/release/browserenv-server

# The image: the runtime stage and the server built above.
FROM runtime
COPY --from=build /src/target/release/browserenv-server /usr/local/bin/browserenv-server
CMD ["server"]
