# The server image: build the Rust binary, then a slim Debian with Chromium's headless shell.
# Run: docker run -p 8000:8000 -e BROWSER_API_TOKEN=... IMAGE
#  (binding 0.0.0.0 needs a token, or BROWSER_INSECURE=1 behind a proxy that authenticates).

FROM rust:1-slim-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src src
COPY server server
COPY tui tui
COPY tests tests
COPY examples examples
COPY assets assets
COPY README.md README.md
RUN cargo build --release --locked -p browserenv-server \
 && strip target/release/browserenv-server

FROM debian:bookworm-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium-headless-shell ca-certificates fonts-dejavu-core curl \
 && rm -rf /var/lib/apt/lists/*
# Not root, so Chromium's sandbox can run. It also needs user namespaces, which Docker's default
# seccomp profile forbids: `docker run --security-opt seccomp=unconfined ...` to get it; without
# that the server runs Chromium with --no-sandbox and says so at start (BROWSER_SANDBOX=off to
# accept it quietly, =on to refuse). The server is pid 1 and reaps Chromium's orphans itself.
RUN useradd --create-home --uid 10001 browserenv
COPY --from=build /src/target/release/browserenv-server /usr/local/bin/browserenv-server
# `server` is what the HF Sandbox launcher (and OpenEnv's tooling) runs.
RUN ln -s /usr/local/bin/browserenv-server /usr/local/bin/server
COPY --chown=browserenv assets/site /opt/browserenv/site
COPY --chown=browserenv assets/tasks /opt/browserenv/tasks

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
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD curl -fsS "http://127.0.0.1:${SBX_SERVICE_PORT}/health" || exit 1
CMD ["server"]
