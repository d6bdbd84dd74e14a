"""The deployment files (deploy/kubernetes, deploy/haproxy, deploy/compose), checked with the real tools.

- Kubernetes: every manifest against the API schemas of KUBERNETES_VERSION with kubernetes-validate
  in strict mode (unknown fields are errors; a kind it has no schema for is an error here too, where
  the tool itself only warns), the kustomization's list and `kubectl kustomize` where kubectl is,
  and the numbers the manifests' comments promise (grace period = preStop + drain + margin, memory
  from the measured memory per session, the peers' headless Service, ...).
- HAProxy: `haproxy -c` on the shipped file and on the file with its servers replaced by loopback
  ones; then that file runs as it is in front of three stub replicas: leastconn, /ready checks,
  WebSocket tunnels, X-Forwarded-For, Mcp-Session-Id stickiness (also to a replica at capacity).
- Compose: `docker compose config` (or docker-compose 1.29, Debian's) on the file, its settings
  against the Deployment's, and its refusal without a token.

Each check is also run on a deliberately broken copy, which must fail. `make test` installs haproxy
and docker-compose (`make deploytools`); kubernetes-validate comes from requirements.txt.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from contextlib import ExitStack, contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml
from websockets.sync.client import connect as ws_connect

from conftest import free_port, with_servers

REPO_ROOT = Path(__file__).resolve().parent.parent.parent
KUBERNETES_DIR = REPO_ROOT / "deploy" / "kubernetes"
HAPROXY_CFG = REPO_ROOT / "deploy" / "haproxy" / "haproxy.cfg"
COMPOSE_FILE = REPO_ROOT / "deploy" / "compose" / "compose.yaml"

# The newest Kubernetes that kubernetes-validate (pinned in requirements.txt) has schemas for.
KUBERNETES_VERSION = "1.37.0"

# docs/benchmark.md, "Sessions": Chromium PSS with BROWSER_ISOLATION=process, 1 session (with
# the warm spare browser), and each additional session.
FIRST_SESSION_MIB = 312
PER_MORE_SESSION_MIB = 92

# The ranges the NetworkPolicy must keep pages away from.
PRIVATE_V4 = {
    "10.0.0.0/8",
    "172.16.0.0/12",
    "192.168.0.0/16",
    "100.64.0.0/10",
    "127.0.0.0/8",
    "169.254.0.0/16",
    "240.0.0.0/4",
}
PRIVATE_V6 = {
    "fc00::/7",
    "fe80::/10",
    # IPv4 hosts spelled in IPv6: IPv4-compatible, 6to4, Teredo, local-use NAT64, and the private
    # ranges through the well-known NAT64 prefix (which stays open for the IPv4 internet).
    "::/96",
    "2002::/16",
    "2001::/32",
    "64:ff9b:1::/48",
    "64:ff9b::a00:0/104",
    "64:ff9b::a9fe:0/112",
    "64:ff9b::ac10:0/108",
    "64:ff9b::c0a8:0/112",
}



# --------------------------------------------------------------------------------------------
# Kubernetes


def manifest_files() -> list[Path]:
    """Every manifest but the kustomization (which is not an API object)."""
    files = sorted(
        p for p in KUBERNETES_DIR.iterdir() if p.suffix in (".yaml", ".yml") and p.stem != "kustomization"
    )
    assert files, f"no manifests in {KUBERNETES_DIR}"
    return files


def load_all(path: Path) -> list[dict]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def objects() -> dict[tuple[str, str], dict]:
    found = {}
    for path in manifest_files():
        for doc in load_all(path):
            found[(doc["kind"], doc["metadata"]["name"])] = doc
    return found


def kubernetes_validate(paths: list[Path]) -> tuple[list[str], int]:
    """Runs the kubernetes-validate CLI, strict; returns (problems, documents that passed).

    A problem is any line that is not INFO (ERROR: invalid; WARN: no schema for the kind, which
    the tool lets pass with exit code 0) and a non-zero exit code.
    """
    result = subprocess.run(
        [sys.executable, "-m", "kubernetes_validate", "--strict", "-k", KUBERNETES_VERSION, *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = [line for line in (result.stdout + result.stderr).splitlines() if line.strip()]
    problems = [line for line in lines if not line.startswith("INFO ")]
    if result.returncode != 0:
        problems.append(f"kubernetes-validate exited with {result.returncode}")
    return problems, sum(line.startswith("INFO ") for line in lines)


def test_kubernetes_validate_knows_the_version():
    import kubernetes_validate.utils as utils

    assert utils.latest_version() == KUBERNETES_VERSION, (
        f"kubernetes-validate's newest schemas are {utils.latest_version()}: update KUBERNETES_VERSION"
    )


def test_every_manifest_validates_strictly():
    files = manifest_files()
    problems, passed = kubernetes_validate(files)
    assert not problems, "\n".join(problems)
    documents = sum(len(load_all(path)) for path in files)
    assert passed == documents, f"{passed} of {documents} documents validated"
    kinds = {kind for kind, _ in objects()}
    assert kinds >= {
        "Deployment",
        "Service",
        "Secret",
        "PodDisruptionBudget",
        "HorizontalPodAutoscaler",
        "NetworkPolicy",
    }, kinds


def _broken(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    "old, new, why",
    [
        ("allowPrivilegeEscalation: false", "allowPrivilegeEscalation: false\n            runAsRoot: false", "unknown field"),
        ("periodSeconds: 10", 'periodSeconds: "ten"', "wrong type"),
        ("kind: Deployment", "kind: Deploymnt", "no such kind"),
        ("apiVersion: apps/v1", "apiVersion: apps/v1beta2", "removed API version"),
        ("  selector:\n    matchLabels:", "  selectr:\n    matchLabels:", "required field missing"),
    ],
)
def test_a_broken_manifest_is_rejected(tmp_path, old, new, why):
    text = (KUBERNETES_DIR / "deployment.yaml").read_text()
    assert old in text
    problems, _ = kubernetes_validate([_broken(tmp_path, "deployment.yaml", text.replace(old, new, 1))])
    assert problems, f"a manifest with a {why} passed"


def test_kustomization_lists_the_manifests(tmp_path):
    kustomization = yaml.safe_load((KUBERNETES_DIR / "kustomization.yaml").read_text())
    listed = set(kustomization["resources"])
    # secret.yaml is left out on purpose (the Secret is made with `kubectl create secret`).
    assert listed == {p.name for p in manifest_files()} - {"secret.yaml"}
    kubectl = shutil.which("kubectl")
    if not kubectl:
        pytest.skip("no kubectl: `kubectl kustomize` not run (the list above was checked)")
    built = subprocess.run(
        [kubectl, "kustomize", str(KUBERNETES_DIR)], capture_output=True, text=True, timeout=120
    )
    assert built.returncode == 0, built.stderr
    out = tmp_path / "built.yaml"
    out.write_text(built.stdout)
    problems, passed = kubernetes_validate([out])
    assert not problems, "\n".join(problems)
    assert passed == sum(len(load_all(KUBERNETES_DIR / name)) for name in listed)


def _env(container: dict) -> dict[str, dict]:
    return {item["name"]: item for item in container["env"]}


def _mib(quantity: str) -> int:
    """A Kubernetes memory quantity in MiB."""
    units = {"Mi": 1, "Gi": 1024, "M": 1e6 / 2**20, "G": 1e9 / 2**20}
    for suffix, factor in units.items():
        if quantity.endswith(suffix):
            return int(float(quantity[: -len(suffix)]) * factor)
    raise AssertionError(f"unexpected memory quantity {quantity!r}")


def _docker_mib(quantity: str | int) -> int:
    """A Docker memory size in MiB: bytes, or a number with k, m or g (binary units)."""
    if isinstance(quantity, int) or str(quantity).isdigit():
        return int(quantity) // 2**20
    number, unit = str(quantity)[:-1], str(quantity)[-1].lower()
    return int(float(number) * {"k": 1 / 1024, "m": 1, "g": 1024}[unit])


def test_deployment_keeps_its_promises():
    objs = objects()
    deployment = objs[("Deployment", "browserenv")]
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    env = _env(container)
    value = {name: item.get("value") for name, item in env.items()}

    # Non-root (the image's uid), nothing to escalate to, read-only but /tmp, seccomp for the sandbox.
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == 10001
    security = container["securityContext"]
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"]["drop"] == ["ALL"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["seccompProfile"]["type"] == "Unconfined"
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert "emptyDir" in volumes[mounts["/tmp"]]
    assert value["TMPDIR"] == "/tmp"

    # Probes: liveness on /health, readiness on /ready, on the container's port.
    port = container["ports"][0]
    assert port["containerPort"] == int(value["SBX_SERVICE_PORT"]) == 8000
    assert container["livenessProbe"]["httpGet"]["path"] == "/health"
    assert container["readinessProbe"]["httpGet"]["path"] == "/ready"

    # Grace period = preStop sleep + drain + a margin of at least 5 s for closing the browsers.
    pre_stop = container["lifecycle"]["preStop"]["exec"]["command"]
    assert pre_stop[0] == "sleep"
    sleep_s = int(pre_stop[1])
    drain_s = int(value["BROWSER_DRAIN_SECONDS"])
    grace_s = pod["terminationGracePeriodSeconds"]
    assert 1 <= sleep_s <= 15
    assert grace_s - sleep_s - drain_s >= 5, (grace_s, sleep_s, drain_s)
    assert grace_s - sleep_s - drain_s <= 15, "the margin is larger than the comment explains"

    # Memory: the measured sessions plus every renderer at its limit.
    sessions = int(value["BROWSER_MAX_SESSIONS"])
    renderer_mib = int(value["BROWSER_RENDERER_MEMORY_MB"])
    needed = FIRST_SESSION_MIB + PER_MORE_SESSION_MIB * (sessions - 1) + sessions * renderer_mib
    limit = _mib(container["resources"]["limits"]["memory"])
    assert limit == _mib(container["resources"]["requests"]["memory"])
    assert needed <= limit <= needed + 512, (needed, limit)
    assert "cpu" not in container["resources"]["limits"], "a CPU limit throttles Chromium into timeouts"

    # The token from the Secret (which all replicas share).
    secret_ref = env["BROWSER_API_TOKEN"]["valueFrom"]["secretKeyRef"]
    secret = objs[("Secret", secret_ref["name"])]
    assert secret_ref["key"] in secret["stringData"]

    # Peers: a headless Service that also lists replicas that are not ready.
    peers = urlsplit(value["BROWSER_PEERS"])
    headless = objs[("Service", peers.hostname)]
    assert headless["spec"]["clusterIP"] == "None"
    assert headless["spec"]["publishNotReadyAddresses"] is True
    assert peers.port == headless["spec"]["ports"][0]["port"] == 8000
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    for service in (s for (kind, _), s in objs.items() if kind == "Service"):
        assert service["spec"]["selector"].items() <= labels.items(), service["metadata"]["name"]
    # The client-facing Service's name is an allowed Host, and so is the peers' (people watching
    # use it when every pod is full, docs/deployment.md).
    allowed = value["BROWSER_ALLOWED_HOSTS"].split(",")
    assert "browserenv" in allowed and "browserenv-peers" in allowed, allowed
    assert objs[("Service", "browserenv")]["spec"].get("clusterIP") != "None"

    # The budget and the autoscaler point at these pods.
    selector = deployment["spec"]["selector"]["matchLabels"]
    assert objs[("PodDisruptionBudget", "browserenv")]["spec"]["selector"]["matchLabels"] == selector
    hpa = objs[("HorizontalPodAutoscaler", "browserenv")]["spec"]
    assert hpa["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "browserenv"}
    assert [m["resource"]["name"] for m in hpa["metrics"]] == ["cpu"]
    assert "replicas" not in deployment["spec"], "the autoscaler owns the replica count"


def test_network_policy_blocks_private_ranges():
    policy = objects()[("NetworkPolicy", "browserenv")]["spec"]
    assert set(policy["policyTypes"]) == {"Ingress", "Egress"}
    excepted = {}
    for rule in policy["egress"]:
        for peer in rule.get("to", []):
            if "ipBlock" in peer:
                excepted[peer["ipBlock"]["cidr"]] = set(peer["ipBlock"].get("except", []))
    assert excepted.keys() == {"0.0.0.0/0", "::/0"}, "the internet, IPv4 and IPv6, is the only ipBlock"
    assert PRIVATE_V4 <= excepted["0.0.0.0/0"]
    assert PRIVATE_V6 <= excepted["::/0"]
    # DNS to kube-dns, the peers on 8000; nothing else by selector.
    selector_rules = [r for r in policy["egress"] if not any("ipBlock" in p for p in r["to"])]
    ports = sorted((p["protocol"], p["port"]) for r in selector_rules for p in r["ports"])
    assert ports == [("TCP", 53), ("TCP", 8000), ("UDP", 53)]
    dns = next(r for r in selector_rules if r["ports"][0]["port"] == 53)
    assert dns["to"][0]["podSelector"]["matchLabels"] == {"k8s-app": "kube-dns"}
    assert [p["port"] for r in policy["ingress"] for p in r["ports"]] == [8000]


# --------------------------------------------------------------------------------------------
# HAProxy


def haproxy_binary() -> str:
    found = shutil.which("haproxy") or ("/usr/sbin/haproxy" if os.access("/usr/sbin/haproxy", os.X_OK) else None)
    assert found, "haproxy is missing: `make deploytools` (or apt-get install haproxy)"
    return found


def haproxy_check(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [haproxy_binary(), "-c", "-f", str(path)], capture_output=True, text=True, timeout=60
    )


def test_haproxy_config_is_valid():
    result = haproxy_check(HAPROXY_CFG)
    assert result.returncode == 0, result.stdout + result.stderr
    text = HAPROXY_CFG.read_text()
    # The shipped servers come from Docker's DNS (the resolver at 127.0.0.11), for the compose
    # service's name.
    template = re.search(r"^\s*server-template \S+ \d+-\d+ (\S+):8000 .*resolvers docker", text, re.M)
    assert template, "no server-template on Docker's resolver"
    assert re.search(r"^\s*nameserver \S+ 127\.0\.0\.11:53$", text, re.M)
    compose = yaml.safe_load(COMPOSE_FILE.read_text())
    assert template.group(1) in compose["services"], template.group(1)


def test_haproxy_config_with_loopback_servers_is_valid(tmp_path):
    cfg = tmp_path / "haproxy.cfg"
    cfg.write_text(with_servers(HAPROXY_CFG.read_text(), [f"server r{i} 127.0.0.1:{9000 + i}" for i in (1, 2, 3)]))
    result = haproxy_check(cfg)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    "old, new",
    [
        ("balance leastconn", "balance leastconnection"),
        ("timeout tunnel 1h", "timeout tunnel forever"),
        ("stick-table type string", "stick-table type strng"),
    ],
)
def test_haproxy_rejects_a_broken_config(tmp_path, old, new):
    text = HAPROXY_CFG.read_text()
    assert old in text
    cfg = tmp_path / "haproxy.cfg"
    cfg.write_text(text.replace(old, new))
    assert haproxy_check(cfg).returncode != 0, f"haproxy -c accepted {new!r}"


class Replica:
    """A stub browserenv-server replica: /health, /ready (200, or 503 at_capacity when full),
    /whoami, POST /mcp (issues Mcp-Session-Id "<name>-<n>"), and a WebSocket /ws that greets with
    its name and echoes text frames prefixed with it."""

    def __init__(self, name: str):
        self.name = name
        self.ready = True
        self.open_websockets = 0
        self.forwarded_for: list[str] = []
        self.mcp_sessions = 0
        self.port = 0
        self.server: asyncio.base_events.Server | None = None
        self.writers: set[asyncio.StreamWriter] = set()

    async def start(self):
        self.server = await asyncio.start_server(self.handle, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.writers.add(writer)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                request_line, *header_lines = head.decode("latin-1").split("\r\n")
                method, path, _ = request_line.split(" ", 2)
                headers = {}
                for line in header_lines:
                    if ":" in line:
                        key, value = line.split(":", 1)
                        headers[key.strip().lower()] = value.strip()
                length = int(headers.get("content-length", "0"))
                if length:
                    await reader.readexactly(length)
                if headers.get("upgrade", "").lower() == "websocket":
                    await self.websocket(reader, writer, headers)
                    return
                status, extra, body = self.route(method, path, headers)
                writer.write(
                    (
                        f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
                        f"Content-Length: {len(body)}\r\n{extra}\r\n"
                    ).encode()
                    + body
                )
                await writer.drain()
                if headers.get("connection", "").lower() == "close":
                    return
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        finally:
            self.writers.discard(writer)
            writer.close()

    def route(self, method: str, path: str, headers: dict) -> tuple[str, str, bytes]:
        host = headers.get("host", "").rsplit(":", 1)[0]
        if host not in ("localhost", "127.0.0.1"):
            # As the server: an HTTP/1.1 request names a Host it accepts (BROWSER_ALLOWED_HOSTS).
            return "400 Bad Request", "", b'{"error":"Host"}'
        if path == "/health":
            return "200 OK", "", b'{"status":"healthy"}'
        if path == "/ready":
            if self.ready:
                return "200 OK", "", b'{"status":"ready"}'
            return "503 Service Unavailable", "", b'{"status":"at_capacity"}'
        if path == "/whoami":
            self.forwarded_for.append(headers.get("x-forwarded-for", ""))
            return "200 OK", "", json.dumps({"name": self.name}).encode()
        if path == "/mcp" and method == "POST":
            session = headers.get("mcp-session-id")
            if session is None:
                self.mcp_sessions += 1
                session = f"{self.name}-{self.mcp_sessions}"
            elif not session.startswith(f"{self.name}-"):
                return "404 Not Found", "", json.dumps({"name": self.name, "error": "unknown session"}).encode()
            return "200 OK", f"Mcp-Session-Id: {session}\r\n", json.dumps({"name": self.name}).encode()
        return "404 Not Found", "", b"{}"

    async def websocket(self, reader, writer, headers):
        accept = base64.b64encode(
            hashlib.sha1((headers["sec-websocket-key"] + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()
        ).decode()
        writer.write(
            (
                "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                f"Sec-WebSocket-Accept: {accept}\r\n\r\n"
            ).encode()
        )
        self.open_websockets += 1
        try:
            self.send_text(writer, self.name)
            while True:
                first, second = await reader.readexactly(2)
                opcode, length = first & 0x0F, second & 0x7F
                if length == 126:
                    length = int.from_bytes(await reader.readexactly(2), "big")
                elif length == 127:
                    length = int.from_bytes(await reader.readexactly(8), "big")
                mask = await reader.readexactly(4) if second & 0x80 else b"\0\0\0\0"
                payload = bytes(b ^ mask[i % 4] for i, b in enumerate(await reader.readexactly(length)))
                if opcode == 0x8:  # close: answer it
                    writer.write(bytes([0x88, len(payload)]) + payload)
                    await writer.drain()
                    return
                if opcode == 0x9:  # ping
                    writer.write(bytes([0x8A, len(payload)]) + payload)
                elif opcode == 0x1:
                    self.send_text(writer, f"{self.name}:{payload.decode()}")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        finally:
            self.open_websockets -= 1

    @staticmethod
    def send_text(writer, text: str):
        data = text.encode()
        assert len(data) < 126
        writer.write(bytes([0x81, len(data)]) + data)


class Balancer:
    def __init__(self, url: str, replicas: dict[str, Replica], loop: asyncio.AbstractEventLoop):
        self.url = url
        self.replicas = replicas
        self.loop = loop

    def set_ready(self, name: str, ready: bool):
        self.loop.call_soon_threadsafe(setattr, self.replicas[name], "ready", ready)

    def request(self, path: str, method: str = "GET", headers: dict | None = None, body: bytes = b"{}"):
        """(status, headers (case-insensitive), JSON body)."""
        request = urllib.request.Request(self.url + path, method=method, headers=headers or {})
        if method == "POST":
            request.data = body
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, response.headers, json.loads(response.read())
        except urllib.error.HTTPError as error:
            body = error.read()
            return error.code, error.headers, json.loads(body) if body.startswith(b"{") else {}

    def whoami(self) -> str:
        """The replica a request that opens no session reaches (any live one)."""
        status, _, body = self.request("/whoami")
        assert status == 200, status
        return body["name"]

    def new_session(self) -> str:
        """The replica a new MCP session goes to (a ready one)."""
        status, _, body = self.request("/mcp", "POST")
        assert status == 200, status
        return body["name"]

    def wait_for(self, names: set[str], timeout_s: float = 10.0):
        """Until new sessions reach exactly these replicas (the others being down to the
        readiness checks)."""
        deadline = time.monotonic() + timeout_s
        while True:
            # None while no replica is ready (the balancer answers 503).
            seen = [
                body.get("name") if status == 200 else None
                for status, _, body in (self.request("/mcp", "POST") for _ in range(3 * len(self.replicas)))
            ]
            if set(seen) == names:
                return
            assert time.monotonic() < deadline, f"reached {sorted(set(seen))}, expected {sorted(names)}"
            time.sleep(0.3)


@pytest.fixture(scope="module")
def balancer(tmp_path_factory):
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="stub-replicas", daemon=True)
    thread.start()
    replicas = {name: Replica(name) for name in ("a", "b", "c")}
    for replica in replicas.values():
        asyncio.run_coroutine_threadsafe(replica.start(), loop).result(10)

    directory = tmp_path_factory.mktemp("haproxy")
    cfg = directory / "haproxy.cfg"
    cfg.write_text(
        with_servers(
            HAPROXY_CFG.read_text(),
            [f"server {name} 127.0.0.1:{replica.port}" for name, replica in replicas.items()],
        )
    )
    port = free_port()
    log = (directory / "haproxy.log").open("w")
    process = subprocess.Popen(
        [haproxy_binary(), "-db", "-f", str(cfg)],
        env={**os.environ, "BALANCER_BIND": f"127.0.0.1:{port}"},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        front = Balancer(f"http://127.0.0.1:{port}", replicas, loop)
        deadline = time.monotonic() + 10
        while True:
            assert process.poll() is None, (directory / "haproxy.log").read_text()
            try:
                front.wait_for(set(replicas), timeout_s=10)
                break
            except (urllib.error.URLError, ConnectionError, AssertionError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        yield front
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
        asyncio.run_coroutine_threadsafe(_stop_replicas(replicas.values()), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.close()


async def _stop_replicas(replicas):
    """Closes the listeners and every connection; the handlers then end on their own."""
    for replica in replicas:
        replica.server.close()
        for writer in list(replica.writers):
            writer.close()
    tasks = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    if tasks:
        await asyncio.wait(tasks, timeout=5)


@contextmanager
def replica_full(balancer: Balancer, name: str):
    """One replica answers /ready with 503 at_capacity; the others are unchanged."""
    balancer.set_ready(name, False)
    try:
        # Checked every second and out after one 503 (the defaults, every 2 s and 3 failures,
        # would take 4-6 s).
        balancer.wait_for(set(balancer.replicas) - {name}, timeout_s=3)
        yield
    finally:
        balancer.set_ready(name, True)
        balancer.wait_for(set(balancer.replicas), timeout_s=3)


def test_balancer_spreads_requests_and_forwards_the_client(balancer):
    names = [balancer.whoami() for _ in range(9)]
    assert set(names) == set(balancer.replicas)
    forwarded = [f for r in balancer.replicas.values() for f in r.forwarded_for]
    assert forwarded and set(forwarded) == {"127.0.0.1"}, forwarded


def _open_ws(balancer: Balancer, stack: ExitStack):
    """A WebSocket through the balancer, closed with the stack; and the replica that greeted."""
    url = balancer.url.replace("http", "ws", 1) + "/ws"
    ws = stack.enter_context(ws_connect(url, open_timeout=5, close_timeout=2))
    return ws, ws.recv(timeout=5)


def _wait_open(balancer: Balancer, name: str, count: int):
    deadline = time.monotonic() + 5
    while balancer.replicas[name].open_websockets != count:
        assert time.monotonic() < deadline, (name, balancer.replicas[name].open_websockets, count)
        time.sleep(0.05)


def test_balancer_tunnels_websockets_to_the_least_busy_replica(balancer):
    with ExitStack() as stack:
        sockets = [_open_ws(balancer, stack) for _ in range(3)]
        # One connection each: leastconn.
        assert sorted(name for _, name in sockets) == sorted(balancer.replicas)
        for ws, name in sockets:
            ws.send("step")
            assert ws.recv(timeout=5) == f"{name}:step"
        # Free the second one's replica: the next WebSocket goes there (round robin would pick
        # the replica after the third, i.e. the first).
        ws, freed = sockets.pop(1)
        ws.close()
        _wait_open(balancer, freed, 0)
        assert _open_ws(balancer, stack)[1] == freed


def test_balancer_skips_a_full_replica_but_keeps_its_connections(balancer):
    with ExitStack() as stack:
        sockets = [_open_ws(balancer, stack) for _ in range(3)]
        ws, full = sockets[0]
        with replica_full(balancer, full):
            # No new sessions or WebSockets for it ...
            assert full not in {balancer.new_session() for _ in range(12)}
            with ExitStack() as extra:
                other = _open_ws(balancer, extra)[1]
            assert other != full
            # (Closed again: leastconn would otherwise send the next requests around it.)
            _wait_open(balancer, other, 1)
            # ... its open session goes on, and requests about sessions still reach it.
            ws.send("still here")
            assert ws.recv(timeout=5) == f"{full}:still here"
            assert full in {balancer.whoami() for _ in range(12)}
        # Back in after its first 200.
        assert full in {balancer.new_session() for _ in range(6)}


def test_when_every_replica_is_full_only_new_sessions_are_refused(balancer):
    for name in balancer.replicas:
        balancer.set_ready(name, False)
    try:
        deadline = time.monotonic() + 3
        while balancer.request("/mcp", "POST")[0] != 503:
            assert time.monotonic() < deadline, "new sessions still go through"
            time.sleep(0.1)
        # Watching, listing, text: any live replica answers (and relays to the session's owner).
        assert {balancer.whoami() for _ in range(9)} == set(balancer.replicas)
        # OpenEnv's MCPToolClient names its session in the body: such a call is not a new session.
        named = json.dumps({"jsonrpc": "2.0", "method": "tools/call", "params": {"session_id": "a-1"}}).encode()
        assert balancer.request("/mcp", "POST", body=named)[0] != 503
        # The name elsewhere in the body (an MCP initialize's _meta) is not a session: still a new
        # one, which no replica may take now.
        meta = json.dumps(
            {"jsonrpc": "2.0", "method": "initialize", "params": {"_meta": {"session_id": "a-1"}}}
        ).encode()
        assert balancer.request("/mcp", "POST", body=meta)[0] == 503
        with ExitStack() as stack:
            with pytest.raises(Exception):
                _open_ws(balancer, stack)
    finally:
        for name in balancer.replicas:
            balancer.set_ready(name, True)
        balancer.wait_for(set(balancer.replicas), timeout_s=3)


def test_balancer_keeps_mcp_sessions_on_their_replica(balancer):
    status, headers, body = balancer.request("/mcp", "POST")
    assert status == 200
    owner = body["name"]
    session = headers.get("Mcp-Session-Id")
    assert session and session.startswith(f"{owner}-")
    for _ in range(6):
        balancer.whoami()  # other traffic moves the rotation on
        status, _, body = balancer.request("/mcp", "POST", {"Mcp-Session-Id": session})
        assert (status, body["name"]) == (200, owner)
    # Its replica is full: new sessions go elsewhere, its own still reach it.
    with replica_full(balancer, owner):
        status, _, body = balancer.request("/mcp", "POST", {"Mcp-Session-Id": session})
        assert (status, body["name"]) == (200, owner)
        status, _, body = balancer.request("/mcp", "POST")
        assert status == 200 and body["name"] != owner


# --------------------------------------------------------------------------------------------
# Compose


def compose_command() -> list[str]:
    """`docker compose` (the v2 plugin) where the Docker CLI has it, else docker-compose."""
    docker = shutil.which("docker")
    if docker:
        probe = subprocess.run([docker, "compose", "version"], capture_output=True, text=True, timeout=60)
        if probe.returncode == 0:
            return [docker, "compose"]
    legacy = shutil.which("docker-compose")
    assert legacy, "neither `docker compose` nor docker-compose: `make deploytools` (apt-get install docker-compose)"
    return [legacy]


def compose_config(path: Path, token: str | None = "test-token") -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BROWSER_", "BALANCER_", "COMPOSE_"))}
    if token is not None:
        env["BROWSER_API_TOKEN"] = token
    return subprocess.run(
        [*compose_command(), "-f", str(path), "config"],
        capture_output=True,
        text=True,
        env=env,
        cwd=path.parent,
        timeout=120,
    )


def test_compose_file_is_valid():
    result = compose_config(COMPOSE_FILE)
    assert result.returncode == 0, result.stderr
    config = yaml.safe_load(result.stdout)
    server = config["services"]["browserenv"]
    balancer = config["services"]["balancer"]

    assert server["image"] == "browserenv:latest"
    assert server["deploy"]["replicas"] == 3
    assert "seccomp:unconfined" in server["security_opt"]
    assert server["read_only"] is True
    assert any(t.split(":")[0] == "/tmp" for t in server["tmpfs"])
    env = server["environment"]
    assert env["BROWSER_API_TOKEN"] == "test-token"
    peers = urlsplit(env["BROWSER_PEERS"])
    assert (peers.hostname, peers.port) == ("browserenv", 8000), "the service name, for Docker's DNS"
    assert "ports" not in server, "the replicas are reached through the balancer only"

    # The same settings as the Deployment where they apply.
    (container,) = objects()[("Deployment", "browserenv")]["spec"]["template"]["spec"]["containers"]
    deployment_env = {item["name"]: item.get("value") for item in container["env"]}
    for name in (
        "BROWSER_MAX_SESSIONS",
        "BROWSER_ISOLATION",
        "BROWSER_BLOCK_PRIVATE_NETWORKS",
        "BROWSER_RENDERER_MEMORY_MB",
        "BROWSER_DRAIN_SECONDS",
        "BROWSER_SANDBOX",
        "BROWSER_HOST",
        "SBX_SERVICE_PORT",
        "TMPDIR",
    ):
        assert str(env[name]) == deployment_env[name], name
    assert _docker_mib(server["deploy"]["resources"]["limits"]["memory"]) == _mib(
        container["resources"]["limits"]["memory"]
    )
    grace = server["stop_grace_period"]
    assert grace.endswith("s") and int(grace[:-1]) >= int(env["BROWSER_DRAIN_SECONDS"]) + 5

    # The balancer runs deploy/haproxy/haproxy.cfg and publishes one port.
    (mount,) = balancer["volumes"]
    source, target = (mount["source"], mount["target"]) if isinstance(mount, dict) else mount.split(":")[:2]
    assert Path(source).resolve() == HAPROXY_CFG.resolve()
    assert target in balancer["command"]
    (published,) = balancer["ports"]
    assert int(published["target"]) == 8000


def test_compose_refuses_to_run_without_a_token():
    result = compose_config(COMPOSE_FILE, token=None)
    assert result.returncode != 0
    assert "BROWSER_API_TOKEN" in result.stderr


@pytest.mark.parametrize(
    "old, new",
    [
        ("replicas: 3", "replicas: three"),
        ("read_only: true", "read_onyl: true"),
        ("    image: browserenv:latest", "    image: [browserenv:latest]"),
    ],
)
def test_a_broken_compose_file_is_rejected(tmp_path, old, new):
    text = COMPOSE_FILE.read_text()
    assert old in text
    broken = tmp_path / "compose.yaml"
    broken.write_text(text.replace(old, new, 1))
    result = compose_config(broken)
    assert result.returncode != 0, f"compose config accepted {new!r}"
