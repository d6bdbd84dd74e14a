"""Three replicas behind a real balancer (Debian's HAProxy, run with deploy/haproxy/haproxy.cfg as
shipped, only its server lines pointed at loopback), as agents and people use them:

- twelve unmodified OpenEnv clients at once through the balancer's one address, spread over the
  replicas (four each: leastconn, and readiness takes a full replica out);
- a watcher through the balancer following a session on each replica (whichever replica the
  balancer picks relays it to the owner), and the terminal UI's own event loop
  (``tui/examples/take_over.rs``) taking over a session on each replica through the balancer;
- one replica killed mid-run: its clients' connections end at once, its watchers are told, the
  other replicas' clients go on untouched, and every replica reports it unreachable.
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import json
import os
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

from openenv.core import GenericEnvClient
from websockets.sync.client import connect

from conftest import REPO_ROOT, SERVER_PIDS, free_port, http_get, launch_server, png_size, with_servers
from test_handoff import take_over_binary

TOKEN = "replicas-s3cret"
HEADERS = {"Authorization": f"Bearer {TOKEN}"}
REPLICAS = 3
SESSIONS_EACH = 4
# The longest a step may take with the server's defaults (docs/server.md, "Step time": a click answers
# within 25.5 s); anything a test waits for here is bounded by it.
STEP_BOUND_S = 25.5
HAPROXY_CONFIG = REPO_ROOT / "deploy" / "haproxy" / "haproxy.cfg"


def get_json(url: str, timeout: float = STEP_BOUND_S):
    import urllib.request

    request = urllib.request.Request(url, headers=HEADERS)
    with http_get(request, timeout=timeout) as response:
        return json.loads(response.read()), dict(response.headers)


def balancer_config(replica_ports: list[int]) -> str:
    """The shipped config with its server lines pointed at loopback."""
    servers = [f"server replica{n} 127.0.0.1:{port}" for n, port in enumerate(replica_ports)]
    return with_servers(HAPROXY_CONFIG.read_text(), servers)


@contextlib.contextmanager
def balancer(replica_ports: list[int], log_dir: Path):
    haproxy = shutil.which("haproxy") or "/usr/sbin/haproxy"
    assert Path(haproxy).exists(), "HAProxy is missing: `make test` installs Debian's haproxy"
    config = log_dir / "haproxy.cfg"
    config.write_text(balancer_config(replica_ports))
    port = free_port()
    log = open(log_dir / "haproxy.log", "wb")
    process = subprocess.Popen(
        [haproxy, "-db", "-f", str(config)],
        env={**os.environ, "BALANCER_BIND": f"127.0.0.1:{port}"},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=10)
        log.close()


def wait_for(what: str, check, bound: float = STEP_BOUND_S):
    deadline = time.monotonic() + bound
    while True:
        try:
            value = check()
            if value:
                return value
        except Exception:  # noqa: BLE001 - a replica or the balancer still starting
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


class Agent:
    """One OpenEnv client through the balancer, with its episode."""

    def __init__(self, base_url: str, episode: str, start_url: str):
        self.episode = episode
        self.env = GenericEnvClient(base_url=base_url, headers=HEADERS).sync()
        self.env.connect()
        result = self.env.reset(start_url=start_url, episode_id=episode)
        assert png_size(result.observation["screenshot"]) == (800, 600)

    def step(self, action: dict):
        return self.env.step(action)

    def close(self):
        with contextlib.suppress(Exception):
            self.env.close()


def watch(base_url: str, session: str):
    url = f"{base_url.replace('http', 'ws', 1)}/sessions/{session}/watch"
    return connect(url, additional_headers=HEADERS, max_size=None, open_timeout=STEP_BOUND_S)


def next_frame(socket) -> dict:
    return json.loads(socket.recv(timeout=STEP_BOUND_S))


def test_twelve_agents_a_watcher_and_a_killed_replica_behind_one_address(pages_url, tmp_path):
    ports = [free_port() for _ in range(REPLICAS)]
    peers = ",".join(f"http://127.0.0.1:{port}" for port in ports)
    args = [
        "--token", TOKEN,
        "--peers", peers,
        "--max-sessions", str(SESSIONS_EACH),
        "--isolation", "context",
        "--max-steps", "200",
    ]
    with contextlib.ExitStack() as stack:
        replicas = [
            stack.enter_context(launch_server(args, tmp_path, port=port, name=f"replica{n}"))
            for n, port in enumerate(ports)
        ]
        lb = stack.enter_context(balancer(ports, tmp_path))
        wait_for(
            "every replica ready behind the balancer",
            lambda: [r["status"] for r in get_json(f"{lb}/replicas")[0]] == ["ready"] * REPLICAS,
        )

        # Twelve agents at once, through the one address.
        start_url = pages_url + "long.html"
        with concurrent.futures.ThreadPoolExecutor(REPLICAS * SESSIONS_EACH) as pool:
            agents = list(pool.map(lambda n: Agent(lb, f"agent-{n}", start_url), range(REPLICAS * SESSIONS_EACH)))
        stack.callback(lambda: [agent.close() for agent in agents])
        sessions, headers = get_json(f"{lb}/sessions")
        assert "browserenv-replicas-unreachable" not in {k.lower() for k in headers}
        assert sorted(s["episode_id"] for s in sessions) == sorted(a.episode for a in agents)
        per_replica = collections.Counter(s["replica"] for s in sessions)
        assert sorted(per_replica) == sorted(replicas), per_replica
        assert set(per_replica.values()) == {SESSIONS_EACH}, per_replica
        by_episode = {s["episode_id"]: s for s in sessions}
        on = {replica: [a for a in agents if by_episode[a.episode]["replica"] == replica] for replica in replicas}
        # Full replicas are not ready: the balancer has nowhere to put a thirteenth.
        assert all(r["status"] == "at_capacity" for r in get_json(f"{lb}/replicas")[0])

        # A watcher through the balancer follows a session on each replica.
        for replica in replicas:
            agent = on[replica][0]
            session = by_episode[agent.episode]["id"]
            with watch(lb, session) as socket:
                first = next_frame(socket)
                assert first["data"]["episode_id"] == agent.episode, first
                agent.step({"op": "scroll", "dy": 200})
                stepped = next_frame(socket)
                assert (stepped["data"]["kind"], stepped["data"]["episode_id"]) == ("step", agent.episode)
                # Its text layer too, whichever replica answers.
                text, _ = get_json(f"{lb}/sessions/{session}/text")
                assert text["session"] == session and text["runs"], text

        # The terminal UI takes over a session on each replica through the balancer.
        for replica in replicas:
            agent = on[replica][1]
            session = by_episode[agent.episode]["id"]
            person = subprocess.Popen(
                [
                    str(take_over_binary()),
                    "--server", lb,
                    "--token", TOKEN,
                    "--session", session,
                    "--command", "scroll 300",
                ],
                stdout=subprocess.PIPE,
                text=True,
            )
            assert person.stdout is not None
            said = []
            for line in person.stdout:
                said.append(json.loads(line)["event"])
                if said[-1] == "handed_back":
                    break
            assert said == ["watching", "in_control", "stepped", "handed_back"], said
            # The agent's next step lists the person's, and the UI shows it.
            after = agent.step({"op": "wait"})
            said += [json.loads(line)["event"] for line in person.stdout]
            assert person.wait(timeout=STEP_BOUND_S) == 0 and said[-2:] == ["agent_stepped", "screen"], said
            human = after.observation["metadata"]["human_steps"]
            assert [(s["action"]["op"], s["action"]["dy"]) for s in human] == [("scroll", 300)], human

        # One replica is killed mid-run.
        doomed, survivors = replicas[0], replicas[1:]
        doomed_session = by_episode[on[doomed][2].episode]["id"]
        # One watcher through the balancer (wherever it lands), one relayed by a survivor.
        lb_watcher = stack.enter_context(watch(lb, doomed_session))
        next_frame(lb_watcher)
        relayed_watcher = stack.enter_context(watch(survivors[0], doomed_session))
        next_frame(relayed_watcher)
        outcomes: dict[str, object] = {}

        def keep_stepping(agent: Agent, stop: threading.Event):
            try:
                steps = 0
                while not stop.is_set() or steps < 3:
                    result = agent.step({"op": "scroll", "dy": 100 if steps % 2 == 0 else -100})
                    assert png_size(result.observation["screenshot"]) == (800, 600)
                    steps += 1
                outcomes[agent.episode] = steps
            except Exception as err:  # noqa: BLE001 - what a killed replica's client sees
                outcomes[agent.episode] = err

        stop = threading.Event()
        threads = [threading.Thread(target=keep_stepping, args=(agent, stop)) for agent in agents]
        for thread in threads:
            thread.start()
        time.sleep(1.0)
        os.kill(SERVER_PIDS[doomed], signal.SIGKILL)
        killed_at = time.monotonic()
        time.sleep(2.0)
        stop.set()
        for thread in threads:
            thread.join(timeout=STEP_BOUND_S * 2)
            assert not thread.is_alive(), "a client hangs"

        for agent in on[doomed]:
            assert isinstance(outcomes[agent.episode], Exception), (agent.episode, outcomes[agent.episode])
        for replica in survivors:
            for agent in on[replica]:
                assert isinstance(outcomes[agent.episode], int) and outcomes[agent.episode] >= 3, (
                    agent.episode,
                    outcomes[agent.episode],
                )
        # The watchers of a session on the killed replica are let go, promptly; the one a
        # survivor relays is told why.
        def last_words(socket) -> dict | None:
            with contextlib.suppress(Exception):
                while True:
                    frame = next_frame(socket)
                    if frame["type"] == "error":
                        return frame
            return None

        told = last_words(relayed_watcher)
        assert told is not None and told["data"]["reason"] == "REPLICA_GONE", told
        last_words(lb_watcher)
        assert time.monotonic() - killed_at < STEP_BOUND_S

        # Every surviving replica reports the dead one, and lists the living sessions.
        listed, headers = wait_for(
            "the survivors' listing",
            lambda: (lambda got: got if len(got[0]) == 2 * SESSIONS_EACH else None)(get_json(f"{lb}/sessions")),
        )
        unreachable = {k.lower(): v for k, v in headers.items()}.get("browserenv-replicas-unreachable", "")
        assert doomed in unreachable, headers
        assert {s["replica"] for s in listed} == set(survivors)
        status = {r["url"]: r["status"] for r in get_json(f"{survivors[0]}/replicas")[0]}
        assert status[doomed] == "unreachable", status

