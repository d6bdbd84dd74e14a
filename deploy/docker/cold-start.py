#!/usr/bin/env python3
"""Cold start of the image: from `docker run` to the first reset's observation arriving.

Each run: `docker run -d --network host` of the image (BROWSER_HOST=127.0.0.1, a free port, a token,
by default `--security-opt seccomp=unconfined` so that Chromium runs sandboxed, as recommended),
then OpenEnv's client connects as soon as the port accepts and resets on the demo site's home page
(assets/site, served from the host by Python's http.server on 127.0.0.1). The time is taken from
just before `docker run` to the reset's observation; the container is removed after each run.

Prints the median of the runs (and each run) on one line; --json prints a JSON object instead.
Run it with the repository's venv (it needs openenv):

    .venv/bin/python deploy/docker/cold-start.py [--image browserenv:latest] [--runs 5]
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import socket
import statistics
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

from openenv.core import GenericEnvClient

SITE = Path(__file__).resolve().parent.parent.parent / "assets" / "site"
TOKEN = "cold-start"
# How long the port may take to accept (the tests' start-up bound, tests/python/conftest.py).
STARTUP_TIMEOUT_S = 60.0


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002
        pass


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def one_run(image: str, page: str, docker_args: list[str]) -> float:
    name = f"browserenv-cold-{uuid.uuid4().hex[:12]}"
    port = free_port()
    command = [
        "docker", "run", "-d", "--name", name, "--network", "host",
        "-e", "BROWSER_HOST=127.0.0.1", "-e", f"SBX_SERVICE_PORT={port}",
        "-e", f"BROWSER_API_TOKEN={TOKEN}", *docker_args, image,
    ]
    started = time.monotonic()
    try:
        subprocess.run(command, check=True, capture_output=True, text=True, timeout=120)
        while not accepts(port):
            if time.monotonic() - started > STARTUP_TIMEOUT_S:
                logs = subprocess.run(["docker", "logs", name], capture_output=True, text=True)
                raise RuntimeError(f"port {port} not accepting after {STARTUP_TIMEOUT_S} s:\n{logs.stdout}{logs.stderr}")
            time.sleep(0.01)
        headers = {"Authorization": f"Bearer {TOKEN}"}
        with GenericEnvClient(base_url=f"http://127.0.0.1:{port}", headers=headers).sync() as env:
            result = env.reset(start_url=page)
            took = time.monotonic() - started
        if result.observation.get("error"):
            raise RuntimeError(f"reset failed: {result.observation['error']}")
        return took
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, timeout=60)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--image", default="browserenv:latest")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--default-seccomp", action="store_true",
        help="leave Docker's default seccomp profile (Chromium then runs with --no-sandbox)",
    )
    parser.add_argument("--json", action="store_true", help="print a JSON object")
    args = parser.parse_args()
    docker_args = [] if args.default_seccomp else ["--security-opt", "seccomp=unconfined"]

    handler = functools.partial(Quiet, directory=str(SITE))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    page = f"http://127.0.0.1:{httpd.server_address[1]}/index.html"
    try:
        seconds = [round(one_run(args.image, page, docker_args), 3) for _ in range(args.runs)]
    finally:
        httpd.shutdown()
    median = statistics.median(seconds)
    if args.json:
        print(json.dumps({"image": args.image, "runs": args.runs, "median_s": median, "seconds": seconds,
                          "sandbox": not args.default_seccomp}))
    else:
        print(f"cold start, docker run to the first reset's observation: median {median:.2f} s "
              f"over {args.runs} runs ({', '.join(f'{s:.2f}' for s in seconds)}) [{args.image}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
