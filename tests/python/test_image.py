"""The Docker image (`make image`; the Dockerfile), run as a user runs it.

Every test starts containers of the image named by ``BROWSERENV_IMAGE`` (default
``browserenv:latest``; `make test` builds it first) with ``--network host``, on a free loopback port
(``BROWSER_HOST=127.0.0.1``), and removes them afterwards. Docker or the image missing is a failure,
not a skip. The pages come from ``pages_url`` (http.server on 127.0.0.1, which the host network lets
the container reach) or from the demo site and tasks the image carries.

Checked: the unmodified OpenEnv client (typed and generic, with a token) resets and steps and gets
800x600 PNGs; `openenv validate --url`; MCP over /mcp with the official SDK, finishing a demo task
by clicking where the host's fonts put the link; Chromium sandboxed with
``--security-opt seccomp=unconfined`` and honestly not without it; a non-root server; the
HEALTHCHECK reaching ``healthy`` (and failing where nothing answers); ``docker stop`` in at most
5 s with exit code 0 and no zombie left by a closed browser; ``--read-only`` with a tmpfs on /tmp;
the image's configuration and size; deploy/docker/cold-start.py.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import re
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest
from openenv.core import GenericEnvClient

from browser_client import BrowserClient
from browser_models import BrowserAction
from conftest import REPO_ROOT, STARTUP_TIMEOUT_S

IMAGE = os.environ.get("BROWSERENV_IMAGE", "browserenv:latest")
TOKEN = "image-s3cret"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
# The image's non-root user (Dockerfile: useradd --uid 10001).
UID = 10001
# The size this image was cut to (about 420 MB; it was 656 MB on the same base): a guard against
# a dependency that brings back Mesa and LLVM.
MAX_IMAGE_BYTES = 600 * 1000 * 1000
# The demo site and tasks in the image (Dockerfile), and a task finished by one click and an answer
# (as tests/python/test_mcp.py does against the host's server).
SITE = ["-e", "BROWSER_SITE_DIR=/opt/browserenv/site", "-e", "BROWSER_TASKS=/opt/browserenv/tasks/demo.jsonl"]
TASK, ANSWER = "info-workshop-time", "10:00"
CATALOG_LINK = {"x": 312, "y": 235}  # "Browse the catalog" on the demo home page, in Liberation Sans
# Docker's health check settings for these runs (the image's own are 10 s apart): the first check
# runs one interval after the start, a check may take up to its timeout.
HEALTH = {"interval": 1, "timeout": 3, "retries": 3}
# What `docker stop` may take (the bound). It is given Docker's default grace before its
# SIGKILL (10 s, which the server's drain bound, BROWSER_DRAIN_SECONDS = 8 s, fits in): a stop that
# needed the SIGKILL would show as exit code 137, not only as time.
STOP_BOUND_S = 5.0
STOP_GRACE_S = 10
# A closed session's browser is SIGKILLed with its process group and reaped at once
# (server/src/chromium/launch/process.rs); the server gives itself the drain bound (8 s) to end sessions.
CLOSE_BOUND_S = 8.0
# The server logs with colours even when its stderr is not a terminal.
ANSI = re.compile(r"\x1b\[[0-9;]*m")
LISTENING = re.compile(r"browserenv-server listening on (http://127\.0\.0\.1:\d+)")

_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def png_size(data_b64: str) -> tuple[int, int]:
    png = base64.b64decode(data_b64, validate=True)
    assert png[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return struct.unpack(">II", png[16:24])


def docker(*args: str, timeout: float = 60, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"docker {' '.join(args)} -> {proc.returncode}: {proc.stderr.strip()}")
    return proc


@pytest.fixture(scope="module", autouse=True)
def image():
    """Docker answers and the image is there; otherwise every test here fails."""
    if shutil.which("docker") is None:
        pytest.fail("no docker command: `make image` installs Docker and builds the image")
    info = subprocess.run(["docker", "info"], capture_output=True, text=True, timeout=60)
    if info.returncode != 0:
        pytest.fail(f"no Docker daemon answers (`make docker` starts one): {info.stderr.strip()}")
    if subprocess.run(["docker", "image", "inspect", IMAGE], capture_output=True).returncode != 0:
        pytest.fail(f"image {IMAGE} not found: run `make image` (or set BROWSERENV_IMAGE)")
    return IMAGE


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def logs(name: str) -> str:
    proc = docker("logs", name, check=False)
    return ANSI.sub("", proc.stdout + proc.stderr)


class Container:
    def __init__(self, name: str, url: str):
        self.name, self.url = name, url

    def logs(self) -> str:
        return logs(self.name)

    def top(self) -> list[tuple[int, list[str]]]:
        """(uid, argv) of every process, from `docker top` (the host's ps on the container)."""
        out = docker("top", self.name, "-eo", "pid,uid,args").stdout.splitlines()[1:]
        rows = []
        for line in out:
            _pid, uid, *argv = line.split()
            rows.append((int(uid), argv))
        return rows

    def chromium_browsers(self) -> list[list[str]]:
        """argv of each Chromium browser process (not its zygotes, renderers, utilities)."""
        return [
            argv
            for _, argv in self.top()
            if argv and argv[0].endswith("chromium-headless-shell")
            and not any(a.startswith("--type=") for a in argv)
        ]

    def processes(self) -> list[tuple[int, int, str, str]]:
        """(pid, ppid, state, name) of every process inside, from /proc (what ps reads; the image
        has bash but not procps), without the reading shell itself."""
        script = 'for s in /proc/[0-9]*/stat; do read -r l < "$s" 2>/dev/null && echo "$l"; done; echo "self $$"'
        out = docker("exec", self.name, "bash", "-c", script).stdout.splitlines()
        me = int(out.pop().split()[1])
        rows = []
        for line in out:
            pid, rest = line.split(" (", 1)
            name, fields = rest.rsplit(") ", 1)
            state, ppid = fields.split()[:2]
            if int(pid) != me:
                rows.append((int(pid), int(ppid), state, name))
        return rows

    def health(self) -> dict:
        return json.loads(docker("inspect", "-f", "{{json .State.Health}}", self.name).stdout)


@contextlib.contextmanager
def container(*options: str, token: bool = True):
    """`docker run -d --network host` of the image on a free loopback port; yields a Container once
    the server said it listens and /health answers. Always removed."""
    name = f"browserenv-test-{uuid.uuid4().hex[:12]}"
    port = free_port()
    env = ["-e", "BROWSER_HOST=127.0.0.1", "-e", f"SBX_SERVICE_PORT={port}"]
    if token:
        env += ["-e", f"BROWSER_API_TOKEN={TOKEN}"]
    try:
        docker("run", "-d", "--name", name, "--network", "host", *env, *options, IMAGE)
        # The same bound as the host's server gets in conftest.launch_server.
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while True:
            match = LISTENING.search(logs(name))
            if match:
                break
            state = docker("inspect", "-f", "{{.State.Status}}", name).stdout.strip()
            assert state == "running", f"container {state}:\n{logs(name)}"
            assert time.monotonic() < deadline, f"no listening line in {STARTUP_TIMEOUT_S} s:\n{logs(name)}"
            time.sleep(0.1)
        url = match.group(1)
        assert url == f"http://127.0.0.1:{port}", url
        with _NO_PROXY.open(f"{url}/health", timeout=5) as response:
            assert response.status == 200
        yield Container(name, url)
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def sandboxed():
    """The recommended run: seccomp that allows user namespaces, a token, the demo site and tasks,
    quick health checks."""
    health = [
        f"--health-interval={HEALTH['interval']}s",
        f"--health-timeout={HEALTH['timeout']}s",
        f"--health-retries={HEALTH['retries']}",
    ]
    with container("--security-opt", "seccomp=unconfined", *SITE, *health) as running:
        yield running


def reset_and_step(url: str, page: str) -> None:
    """The generic OpenEnv client, with the token: reset on `page`, one step, the state."""
    with GenericEnvClient(base_url=url, headers=AUTH).sync() as env:
        first = env.reset(start_url=page)
        assert first.observation["error"] == "", first.observation
        assert first.observation["url"] == page
        assert png_size(first.observation["screenshot"]) == (800, 600)
        scrolled = env.step({"op": "scroll", "dy": 400})
        assert scrolled.observation["error"] == "", scrolled.observation
        assert png_size(scrolled.observation["screenshot"]) == (800, 600)
        assert scrolled.observation["screenshot"] != first.observation["screenshot"]
        state = env.state()
        assert (state["step_count"] if isinstance(state, dict) else state.step_count) == 1


# ------------------------------------------------------------------------------------ the image


def test_image_configuration_and_size():
    config = json.loads(docker("image", "inspect", IMAGE).stdout)[0]
    assert config["Size"] <= MAX_IMAGE_BYTES, f"{config['Size'] / 1e6:.0f} MB"
    cfg = config["Config"]
    assert cfg["User"] == "browserenv"
    assert cfg["Cmd"] == ["server"]
    assert "8000/tcp" in cfg["ExposedPorts"]
    assert cfg["Healthcheck"]["Test"] == ["CMD", "/usr/local/bin/browserenv-healthcheck"]
    env = dict(item.split("=", 1) for item in cfg["Env"])
    assert env["BROWSER_CHROMIUM"] == "/usr/lib/chromium/chromium-headless-shell"
    assert env["BROWSER_HOST"] == "0.0.0.0" and env["SBX_SERVICE_PORT"] == "8000"
    assert env["BROWSER_MAX_STEPS"] == "20" and env["BROWSER_SETTLE"] == "adaptive"
    # (As root: apt-get check takes dpkg's lock.) `server` on PATH, every library the headless shell links present, dpkg consistent with the
    # stand-in for x11-utils and xdg-utils (and without Mesa's DRI drivers and LLVM).
    check = (
        "command -v server && "
        "! ldd /usr/lib/chromium/chromium-headless-shell | grep 'not found' && "
        "dpkg --audit && apt-get check -qq && "
        "! dpkg -l libllvm15 libgl1-mesa-dri x11-utils 2>/dev/null | grep '^ii' && "
        # The fonts: generic families on DejaVu, the common named ones on their metric twins.
        "for f in sans-serif serif monospace Arial Helvetica 'Times New Roman' 'Courier New'; do "
        "fc-match -f '%{family[0]}|' \"$f\"; done; echo"
    )
    run = docker("run", "--rm", "--user", "0", "--entrypoint", "bash", IMAGE, "-c", check, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    fonts = run.stdout.strip().splitlines()[-1].split("|")[:-1]
    assert fonts == ["DejaVu Sans", "DejaVu Serif", "DejaVu Sans Mono", "Liberation Sans",
                     "Liberation Sans", "Liberation Serif", "Liberation Mono"], fonts


# ------------------------------------------------------------------------------- the clients


def test_the_openenv_clients_reset_and_step_with_the_token(sandboxed, pages_url):
    reset_and_step(sandboxed.url, f"{pages_url}long.html")
    # The seed's typed client too.
    with BrowserClient(base_url=sandboxed.url, headers=AUTH).sync() as env:
        result = env.reset(start_url=f"{pages_url}form.html")
        assert result.observation.error == ""
        assert png_size(result.observation.screenshot) == (800, 600)
        clicked = env.step(BrowserAction(op="click", x=10, y=10))
        assert clicked.observation.error == "" and clicked.observation.url.endswith("form.html")
    # And nothing without it (but /health).
    with pytest.raises(urllib.error.HTTPError) as refused:
        _NO_PROXY.open(f"{sandboxed.url}/metadata", timeout=5)
    assert refused.value.code == 401


def test_openenv_validate_passes_against_the_container():
    # `openenv validate` sends no token: a loopback container needs none.
    with container(token=False) as running:
        cli = Path(sys.executable).parent / "openenv"
        env = dict(os.environ)
        for name in ("NO_PROXY", "no_proxy"):
            env[name] = ",".join(filter(None, [env.get(name), "127.0.0.1", "localhost"]))
        proc = subprocess.run(
            [str(cli), "validate", "--url", running.url, "--json"],
            capture_output=True,
            text=True,
            timeout=180,
            env=env,
        )
        output = proc.stdout + proc.stderr
        assert proc.returncode == 0, output
        report = json.loads(proc.stdout[proc.stdout.index("{") :])
        assert report["passed"] is True, output


def test_mcp_sdk_over_streamable_http_finishes_a_demo_task(sandboxed):
    import httpx
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async def run():
        async with httpx.AsyncClient(headers=AUTH, trust_env=False) as http:
            async with streamable_http_client(f"{sandboxed.url}/mcp", http_client=http) as (read, write, _):
                async with ClientSession(read, write) as session:
                    hello = await session.initialize()
                    assert hello.serverInfo.name == "browserenv"
                    first = await session.call_tool("reset", {"task_id": TASK})
                    assert not first.isError, first.content
                    assert first.structuredContent["url"].endswith("/index.html")
                    image = next(block for block in first.content if block.type == "image")
                    assert image.mimeType == "image/png" and png_size(image.data) == (800, 600)
                    # Where the link is depends on the fonts: the image's must lay the page out
                    # as the host's do.
                    clicked = await session.call_tool("click", CATALOG_LINK)
                    assert clicked.structuredContent["url"].endswith("/catalog.html"), clicked.structuredContent
                    done = await session.call_tool("finish", {"answer": ANSWER})
                    return done.structuredContent

    facts = asyncio.run(asyncio.wait_for(run(), 120))
    assert facts["done"] is True and facts["reward"] == 1.0, facts


# ------------------------------------------------------------------------ sandbox, user, health


def test_chromium_runs_in_its_sandbox_with_seccomp_unconfined(sandboxed, pages_url):
    assert "Chromium runs in its sandbox (not root, and user namespaces are available)" in sandboxed.logs()
    with GenericEnvClient(base_url=sandboxed.url, headers=AUTH).sync() as env:
        env.reset(start_url=f"{pages_url}long.html")
        browsers = sandboxed.chromium_browsers()
        assert browsers, sandboxed.top()
        for _, argv in sandboxed.top():
            assert "--no-sandbox" not in argv, argv


def test_without_it_the_server_says_chromium_runs_unsandboxed(pages_url):
    with container() as running:
        log = running.logs()
        assert "Chromium runs without its sandbox (--no-sandbox): this process may not create user namespaces (in Docker: --security-opt seccomp=unconfined" in log, log
        assert "Chromium runs in its sandbox" not in log
        with GenericEnvClient(base_url=running.url, headers=AUTH).sync() as env:
            result = env.reset(start_url=f"{pages_url}long.html")
            assert result.observation["error"] == ""
            browsers = running.chromium_browsers()
            assert browsers and all("--no-sandbox" in argv for argv in browsers), browsers


def test_the_server_and_chromium_run_as_the_non_root_user(sandboxed, pages_url):
    assert docker("exec", sandboxed.name, "id", "-u").stdout.strip() == str(UID)
    with GenericEnvClient(base_url=sandboxed.url, headers=AUTH).sync() as env:
        env.reset(start_url=f"{pages_url}long.html")
        rows = sandboxed.top()
        assert any(argv[:1] == ["server"] for _, argv in rows), rows
        # The sandbox's user namespace maps our user to itself: the host sees 10001 everywhere.
        assert {uid for uid, _ in rows} == {UID}, rows


def test_the_healthcheck_gets_healthy_and_fails_where_nothing_answers(sandboxed):
    deadline = time.monotonic() + HEALTH["interval"] * 2 + HEALTH["timeout"]
    while (health := sandboxed.health())["Status"] != "healthy":
        assert health["Status"] == "starting", health
        assert time.monotonic() < deadline, health
        time.sleep(0.2)
    assert health["Log"][-1]["ExitCode"] == 0, health
    # The same check against a port nothing listens on fails (it is not `exit 0`).
    dead = docker(
        "exec", "-e", f"SBX_SERVICE_PORT={free_port()}", sandboxed.name,
        "/usr/local/bin/browserenv-healthcheck", check=False,
    )
    assert dead.returncode != 0


# ------------------------------------------------------------------------------- stop, read-only


def test_docker_stop_is_quick_clean_and_leaves_no_zombies(pages_url):
    # No warm spare: once the session is closed, no Chromium should be left at all.
    with container("--security-opt", "seccomp=unconfined", "-e", "BROWSER_NO_WARM_SPARE=true") as running:
        with GenericEnvClient(base_url=running.url, headers=AUTH).sync() as env:
            env.reset(start_url=f"{pages_url}long.html")
            env.step({"op": "scroll", "dy": 200})
            assert running.chromium_browsers()
        deadline = time.monotonic() + CLOSE_BOUND_S
        while True:
            procs = running.processes()
            chromium = [p for p in procs if "chrom" in p[3]]
            zombies = [p for p in procs if p[2] == "Z"]
            if not chromium and not zombies:
                break
            assert time.monotonic() < deadline, f"left after the session closed: {procs}"
            time.sleep(0.2)
        # What is left: the server as pid 1 (its reaping init) and the server it forked.
        assert sorted(p[0] for p in procs)[0] == 1 and {p[3] for p in procs} == {"server"}, procs
        started = time.monotonic()
        docker("stop", "-t", str(STOP_GRACE_S), running.name, timeout=STOP_GRACE_S + 30)
        took = time.monotonic() - started
        state = json.loads(docker("inspect", "-f", "{{json .State}}", running.name).stdout)
        assert state["ExitCode"] == 0 and not state["OOMKilled"], state
        assert took <= STOP_BOUND_S, f"docker stop took {took:.1f} s"


def test_nothing_is_written_outside_tmp(sandboxed, pages_url):
    """What makes --read-only work: sessions write their profiles under /tmp only (nothing under
    HOME: no fontconfig cache, whose build-time copy is valid, and no Chromium settings)."""
    reset_and_step(sandboxed.url, f"{pages_url}long.html")
    changed = docker("diff", sandboxed.name).stdout.split("\n")
    outside = [line for line in changed if line and not re.match(r"^[ACD] /tmp(/|$)", line)]
    assert not outside, outside


def test_read_only_root_with_a_tmpfs_on_tmp(pages_url):
    with container("--security-opt", "seccomp=unconfined", "--read-only", "--tmpfs", "/tmp") as running:
        reset_and_step(running.url, f"{pages_url}long.html")
        assert "Chromium runs in its sandbox" in running.logs()


# ------------------------------------------------------------------------------- cold start


def test_cold_start_script_prints_its_figure():
    script = REPO_ROOT / "deploy" / "docker" / "cold-start.py"
    run = subprocess.run(
        [sys.executable, str(script), "--image", IMAGE, "--runs", "1", "--json"],
        capture_output=True,
        text=True,
        timeout=STARTUP_TIMEOUT_S + 120,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads(run.stdout.splitlines()[-1])
    assert report["runs"] == 1 and len(report["seconds"]) == 1
    assert 0 < report["median_s"] == statistics.median(report["seconds"]) < STARTUP_TIMEOUT_S
