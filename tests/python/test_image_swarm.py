"""The trainers' own scale-out: the image run by OpenEnv's ``DockerSwarmProvider`` (a replicated
Swarm service behind Swarm's routing mesh) on a one-node swarm this test makes and removes, three
replicas, eight MiniWoB++ rollouts at once through the typed client (``BrowserClient``), and every
session's HTTP calls and ``watch`` reaching the replica that holds it through the one published
port. The replicas find each other through Swarm's own service DNS, ``tasks.<service>``
(``BROWSER_PEERS``), on the overlay network the provider attaches (Swarm's ingress network has no
service DNS).

Swarm's routing mesh balances a published port with the kernel's IPVS. A kernel without it (this
project's test machines: no `/proc/sys/net/ipv4/vs`, and dockerd logs that it cannot read
`net.ipv4.vs.*`; the published port then refuses every connection) gets a stand-in that does what
the mesh does, per connection, round robin, to each replica's address on the host's side
(`docker_gwbridge`), on the port the provider published: `RoutingMesh` below. Everything else is
Swarm's own: the service, its replicas, the overlay network, `tasks.<service>`.

What a Swarm service cannot set: ``--security-opt seccomp=unconfined`` (``docker service create``
has no such option), which Chromium's sandbox needs for its user namespaces in Docker's default
seccomp profile. So through the provider Chromium runs without its sandbox and each replica's log
says so at start (checked here); the measured alternative, a service with ``--cap-add
CAP_SYS_ADMIN`` (with which Docker's default profile lets the non-root server create user
namespaces) and ``BROWSER_SANDBOX=on``, is checked too: its replicas start sandboxed.
docs/deployment.md, "Docker Swarm", says both.

As in tests/python/test_image.py: the image is ``BROWSERENV_IMAGE`` (default
``browserenv:latest``; `make test` builds it first), and Docker or the image missing is a failure.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import itertools
import json
import os
import secrets
import shutil
import socket
import subprocess
import threading
import time
import urllib.request

import pytest
from openenv.core.containers.runtime.providers import DockerSwarmProvider
from websockets.sync.client import connect

from browserenv import BrowserAction, BrowserClient
from conftest import http_get, png_size
from miniwob_solvers import SOLVERS, Page

IMAGE = os.environ.get("BROWSERENV_IMAGE", "browserenv:latest")
SERVICE = f"browserenv-swarm-{os.getpid()}"
NETWORK = f"{SERVICE}-peers"
REPLICAS = 3
ROLLOUTS = 8
TOKEN = secrets.token_hex(24)
HEADERS = {"Authorization": f"Bearer {TOKEN}"}
# The longest a step may take with the server's defaults (docs/server.md, "Step time").
STEP_BOUND_S = 25.5
# Starting three replicas (Chromium each) on a loaded two-core machine.
START_BOUND_S = 180
# Rollouts of tasks the scripted solvers solve, two per replica at least.
TASKS = ["miniwob.click-test", "miniwob.enter-text", "miniwob.click-checkboxes", "miniwob.click-tab",
         "miniwob.navigate-tree", "miniwob.login-user", "miniwob.click-button", "miniwob.use-spinner"]


def docker(*args: str, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"docker {' '.join(args)}: {proc.stderr.strip()}")
    return proc


class NamedSwarmProvider(DockerSwarmProvider):
    """OpenEnv's provider, the service's name chosen before it starts: `BROWSER_PEERS` names it."""

    def __init__(self, name: str, **kwargs):
        self._chosen_name = name
        super().__init__(**kwargs)

    def _generate_service_name(self, image: str) -> str:
        return self._chosen_name


def get_json(url: str):
    request = urllib.request.Request(url, headers=HEADERS)
    with http_get(request, timeout=STEP_BOUND_S) as response:
        return json.loads(response.read())


def wait_for(what: str, check, bound: float):
    deadline = time.monotonic() + bound
    last = None
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError, ValueError, KeyError):
            last = check()
            if last:
                return last
        time.sleep(1)
    raise AssertionError(f"{what}: not within {bound} s (last: {last})")


def has_ipvs() -> bool:
    return os.path.isdir("/proc/sys/net/ipv4/vs")


class RoutingMesh:
    """Swarm's routing mesh where the kernel has no IPVS: 127.0.0.1:PORT, each connection passed
    to the next replica in turn (their `docker_gwbridge` addresses, looked up as they come)."""

    def __init__(self, port: int, service: str):
        self.service = service
        self.listener = socket.create_server(("127.0.0.1", port))
        self.turn = itertools.count()
        self.stopped = threading.Event()
        threading.Thread(target=self.accept, daemon=True).start()

    def replicas(self) -> list[str]:
        ids = docker("ps", "-q", "--no-trunc", "--filter", f"label=com.docker.swarm.service.name={self.service}",
                     "--filter", "status=running", check=False).stdout.split()
        bridge = json.loads(docker("network", "inspect", "docker_gwbridge", "--format", "{{json .Containers}}").stdout)
        return sorted(bridge[i]["IPv4Address"].split("/")[0] for i in ids if i in bridge)

    def accept(self):
        while not self.stopped.is_set():
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self.carry, args=(client,), daemon=True).start()

    def carry(self, client: socket.socket):
        replicas = self.replicas()
        if not replicas:
            client.close()
            return
        try:
            upstream = socket.create_connection((replicas[next(self.turn) % len(replicas)], 8000), timeout=10)
        except OSError:
            client.close()
            return
        upstream.settimeout(None)

        def pipe(source: socket.socket, sink: socket.socket):
            with contextlib.suppress(OSError):
                while data := source.recv(65536):
                    sink.sendall(data)
            with contextlib.suppress(OSError):
                sink.shutdown(socket.SHUT_WR)

        threading.Thread(target=pipe, args=(upstream, client), daemon=True).start()
        pipe(client, upstream)

    def close(self):
        self.stopped.set()
        self.listener.close()


def service_logs(name: str) -> str:
    """What the service's replicas wrote (the server logs to stderr, the address to stdout)."""
    proc = docker("service", "logs", "--raw", name, timeout=60, check=False)
    return proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def swarm():
    """A one-node swarm (made here unless one is active, and then left), the image there, and
    OpenEnv's provider."""
    if shutil.which("docker") is None:
        pytest.fail("no docker command: `make image` installs Docker and builds the image")
    if docker("info", check=False).returncode != 0:
        pytest.fail("no Docker daemon answers (`make docker` starts one)")
    if docker("image", "inspect", IMAGE, check=False).returncode != 0:
        pytest.fail(f"image {IMAGE} not found: run `make image` (or set BROWSERENV_IMAGE)")
    state = docker("info", "--format", "{{.Swarm.LocalNodeState}}").stdout.strip()
    made = state != "active"
    if made:
        # On loopback: a one-node swarm needs no other address (the provider's own `swarm init`
        # picks one, and fails on a machine with several).
        docker("swarm", "init", "--advertise-addr", "127.0.0.1")
    try:
        yield
    finally:
        if made:
            docker("swarm", "leave", "--force", check=False)


@contextlib.contextmanager
def service(provider: DockerSwarmProvider, env: dict[str, str], replicas: int = REPLICAS, then=None):
    url = provider.start_container(IMAGE, env_vars=env, replicas=replicas)
    mesh = None if has_ipvs() else RoutingMesh(provider._published_port, SERVICE)
    try:
        if then:
            then()
        provider.wait_for_ready(url, timeout_s=START_BOUND_S)
        yield url
    finally:
        if mesh:
            mesh.close()
        provider.stop_container()
        # The service's tasks go first, then its network can.
        wait_for("the service's containers gone",
                 lambda: not docker("ps", "-q", "--filter", f"label=com.docker.swarm.service.name={SERVICE}").stdout.strip(),
                 60)
        docker("network", "rm", NETWORK, check=False)


def replica_env() -> dict[str, str]:
    return {
        "BROWSER_API_TOKEN": TOKEN,
        "BROWSER_MINIWOB_DIR": "/opt/browserenv/miniwob",
        "BROWSER_PEERS": f"http://tasks.{SERVICE}:8000",
        "BROWSER_MAX_SESSIONS": "4",
    }


def rollout(url: str, task_id: str, seed: int) -> tuple[Page, BrowserClient]:
    env = BrowserClient(base_url=url, token=TOKEN).sync()
    env.connect()
    page = Page(env, task_id, seed)
    assert png_size(page.result.observation.screenshot) == (800, 600)
    return page, env


def test_eight_miniwob_rollouts_on_three_swarm_replicas_found_by_service_dns(swarm):
    provider = NamedSwarmProvider(SERVICE, auto_init_swarm=False, overlay_network=NETWORK)
    with service(provider, replica_env()) as url:
        replicas = wait_for(
            "three replicas ready, each seeing the others through tasks.<service>",
            lambda: (lambda got: got if [r["status"] for r in got] == ["ready"] * REPLICAS else None)(
                get_json(f"{url}/replicas")),
            START_BOUND_S,
        )
        assert sum(r["self"] for r in replicas) == 1, replicas
        logs = service_logs(SERVICE)
        # No seccomp option on a service: each replica says Chromium runs unsandboxed, and why.
        assert logs.count("Chromium runs without its sandbox (--no-sandbox)") == REPLICAS, logs[-3000:]
        assert logs.count("125 MiniWoB++ tasks from /opt/browserenv/miniwob") == REPLICAS, logs[-3000:]

        # Eight rollouts at once through the typed client, the routing mesh spreading them.
        with concurrent.futures.ThreadPoolExecutor(ROLLOUTS) as pool:
            started = list(pool.map(lambda n: rollout(url, TASKS[n], n), range(ROLLOUTS)))
        try:
            sessions = get_json(f"{url}/sessions")
            assert len(sessions) == ROLLOUTS, sessions
            by_episode = {s["episode_id"]: s for s in sessions}
            holders = {by_episode[page.env.state().episode_id]["replica"] for page, _ in started}
            assert len(holders) >= 2, f"the routing mesh put every session on one replica: {sessions}"

            # Each session's HTTP calls and its watch, through the one address, reach its holder.
            for page, _ in started:
                episode = page.env.state().episode_id
                session = by_episode[episode]
                # Only the holder knows the session: any other replica passes the call on.
                found = get_json(f"{url}/sessions/{session['id']}")
                assert found["episode_id"] == episode, found
                text = get_json(f"{url}/sessions/{session['id']}/text")
                assert text["session"] == session["id"] and text["runs"], text
                watch_url = f"{url.replace('http', 'ws', 1)}/sessions/{session['id']}/watch"
                with connect(watch_url, additional_headers=HEADERS, open_timeout=STEP_BOUND_S, max_size=None) as socket:
                    first = json.loads(socket.recv(timeout=STEP_BOUND_S))
                    assert first["data"]["episode_id"] == episode, first
                    SOLVERS[page.task_id](page)
                    while True:
                        frame = json.loads(socket.recv(timeout=STEP_BOUND_S))
                        if frame["data"].get("kind") == "step" and frame["data"]["result"]["done"]:
                            break
                assert page.done and page.reward == 1.0, (page.task_id, page.instruction, page.reward)
        finally:
            for _, env in started:
                with contextlib.suppress(Exception):
                    env.close()


def test_with_cap_sys_admin_a_swarm_replica_runs_chromium_sandboxed(swarm):
    """The measured alternative to the seccomp option: the service given CAP_SYS_ADMIN (Docker's
    default seccomp profile then allows the namespaces Chromium's sandbox makes; the server runs as
    uid 10001, which holds no capability itself), and BROWSER_SANDBOX=on refusing to start
    without the sandbox."""
    provider = NamedSwarmProvider(SERVICE, auto_init_swarm=False, overlay_network=NETWORK)
    env = {**replica_env(), "BROWSER_SANDBOX": "on"}
    grant = lambda: docker("service", "update", "--detach", "--cap-add", "CAP_SYS_ADMIN", SERVICE)  # noqa: E731
    with service(provider, env, replicas=1, then=grant) as url:
        wait_for("a sandboxed replica", lambda: "Chromium runs in its sandbox" in service_logs(SERVICE), START_BOUND_S)
        wait_for("the sandboxed replica answering",
                 lambda: get_json(f"{url}/replicas")[0]["status"] == "ready", START_BOUND_S)
        with BrowserClient(base_url=url, token=TOKEN).sync() as env_client:
            page = Page(env_client, "miniwob.click-test", 1)
            SOLVERS["miniwob.click-test"](page)
            assert page.reward == 1.0
