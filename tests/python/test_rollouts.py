"""Many rollouts at once from one Python process: 8 async ``BrowserClient`` rollouts in one event
loop, interleaved step by step, each with its own session. No shared state between them: each sees
its own episode id, its own URL and its own step count, in every answer (step, ``state()``,
``read_page()``) and in the server's ``/sessions``. And ``bench_rollouts.py`` (the figure of
docs/training.md) runs and prints its row.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import urllib.request
import uuid

import pytest

from bench_rollouts import HEADER, run_async
from browserenv import BrowserClient
from conftest import HERE, launch_server

ROLLOUTS = 8
TOKEN = "rollouts-s3cret"
_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with launch_server(["--max-sessions", str(ROLLOUTS), "--token", TOKEN], tmp_path_factory.mktemp("rollouts")) as url:
        yield url


def sessions(server: str) -> list[dict]:
    request = urllib.request.Request(f"{server}/sessions", headers={"Authorization": f"Bearer {TOKEN}"})
    with _NO_PROXY.open(request, timeout=10) as response:
        body = json.load(response)
    return body if isinstance(body, list) else body["sessions"]  # the latter with BROWSER_PEERS


def test_eight_async_rollouts_in_one_process_keep_to_their_own_episodes(server, pages_url):
    tag = f"r{uuid.uuid4().hex[:6]}"
    counts = [3 + i for i in range(ROLLOUTS)]  # each its own length: 3..10 steps
    records, _ = asyncio.run(
        asyncio.wait_for(
            run_async(server, TOKEN, f"{pages_url}long.html", ROLLOUTS, counts, check_every=1, tag=tag), 600
        )
    )
    assert len(records) == ROLLOUTS
    for rollout, count in zip(records, counts):
        own_url = f"{pages_url}long.html?rollout={rollout.index}"
        assert rollout.episode_id == f"{tag}-{rollout.index}"
        assert rollout.reset_url == own_url
        assert [s.step for s in rollout.steps] == list(range(1, count + 1))
        assert [s.metadata_step for s in rollout.steps] == list(range(1, count + 1)), rollout
        assert {s.url for s in rollout.steps} == {own_url}, rollout
        assert rollout.states == [(rollout.episode_id, k) for k in range(1, count + 1)], rollout
        assert rollout.pages == [(rollout.episode_id, own_url, k) for k in range(1, count + 1)], rollout
    # They ran at once: every rollout's first step began before any rollout's last step ended.
    assert max(r.steps[0].began for r in records) < min(r.steps[-1].began + r.steps[-1].seconds for r in records)


def test_the_server_sees_eight_sessions_each_with_its_own_episode(server, pages_url):
    async def run():
        clients = [BrowserClient(base_url=server, token=TOKEN) for _ in range(ROLLOUTS)]
        try:
            await asyncio.gather(*(c.connect() for c in clients))
            await asyncio.gather(
                *(c.reset(start_url=f"{pages_url}long.html?s={i}", episode_id=f"seen-{i}") for i, c in enumerate(clients))
            )
            for i, client in enumerate(clients):  # rollout i takes i steps
                for _ in range(i):
                    await client.step({"op": "scroll", "dy": 100})
            listed = await asyncio.to_thread(sessions, server)
            states = await asyncio.gather(*(c.state() for c in clients))
            return listed, states
        finally:
            await asyncio.gather(*(c.close() for c in clients), return_exceptions=True)

    listed, states = asyncio.run(asyncio.wait_for(run(), 300))
    by_episode = {s["episode_id"]: s for s in listed}
    for i, state in enumerate(states):
        assert (state.episode_id, state.step_count) == (f"seen-{i}", i)
        seen = by_episode[f"seen-{i}"]
        assert seen["step_count"] == i and seen["url"] == f"{pages_url}long.html?s={i}", seen
    assert len({s["id"] for s in listed if s["episode_id"].startswith("seen-")}) == ROLLOUTS


def test_the_bench_prints_its_row(server, pages_url):
    run = subprocess.run(
        [sys.executable, str(HERE / "bench_rollouts.py"), "--server", server, "--token", TOKEN,
         "--start-url", f"{pages_url}long.html", "--rollouts", "2", "--steps", "2", "--header"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[:2] == HEADER.splitlines()
    assert re.fullmatch(r"\| 2 \| 2 \| [\d.]+ \| \d+ \| [\d.]+ \| \d+ \|", lines[2]), lines
