"""``BrowserClient.from_docker_image``: the project's image (`make image`) started through OpenEnv's
``LocalDockerProvider`` (``docker run -d -p 127.0.0.1:PORT:8000 -e ...``), waited for and used, sync and
async, as OpenEnv's clients start any environment's image.

What the image needs from the provider: port 8000 (``SBX_SERVICE_PORT``, mapped by the provider),
and a token, since it listens on 0.0.0.0, where the server refuses to start without one:
``from_docker_image`` makes one, hands it to the container (``BROWSER_API_TOKEN``) and sends it.
Further settings go in ``env_vars`` (here the image's demo site and tasks).

As in tests/python/test_image.py: the image is ``BROWSERENV_IMAGE`` (default
``browserenv:latest``; `make test` builds it first), and Docker or the image missing is a failure,
not a skip.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess

import pytest
from openenv.core import GenericEnvClient

from browserenv import BrowserAction, BrowserClient, BrowserObservation
from conftest import png_size

IMAGE = os.environ.get("BROWSERENV_IMAGE", "browserenv:latest")
SITE = {"BROWSER_SITE_DIR": "/opt/browserenv/site", "BROWSER_TASKS": "/opt/browserenv/tasks/demo.jsonl"}
TASK, ANSWER = "info-workshop-time", "10:00"


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


def inspect_container(container_id: str) -> dict | None:
    proc = subprocess.run(["docker", "inspect", container_id], capture_output=True, text=True, timeout=60)
    return json.loads(proc.stdout)[0] if proc.returncode == 0 else None


def test_sync_from_docker_image_starts_waits_and_works():
    client = BrowserClient.from_docker_image(IMAGE, env_vars=SITE).sync()
    provider = client.async_client._provider
    container_id = provider._container_id
    try:
        config = inspect_container(container_id)
        assert config["State"]["Running"] is True
        env = dict(entry.split("=", 1) for entry in config["Config"]["Env"])
        token = env["BROWSER_API_TOKEN"]
        assert len(token) >= 24, "a token of its own"
        assert client.async_client._headers == {"Authorization": f"Bearer {token}"}
        assert "8000/tcp" in config["HostConfig"]["PortBindings"]

        result = client.reset(task_id=TASK)
        assert isinstance(result.observation, BrowserObservation)
        assert result.observation.url.endswith("/index.html") and result.observation.error == ""
        assert png_size(result.observation.screenshot) == (800, 600)
        assert "Free workshop this Saturday" in client.read_page().text
        result = client.step(BrowserAction(op="finish", text=ANSWER))
        assert result.done is True and result.reward == 1.0
        assert client.state().step_count == 1

        # The token is what lets a client in.
        with pytest.raises(Exception) as refused:
            with GenericEnvClient(base_url=client.base_url).sync() as stranger:
                stranger.state()
        assert "401" in str(refused.value) or "401" in repr(refused.value.__cause__)
    finally:
        client.close()
    assert inspect_container(container_id) is None, "close() stops and removes the container"


def test_async_from_docker_image():
    async def run():
        client = await BrowserClient.from_docker_image(IMAGE, env_vars=SITE)
        container_id = client._provider._container_id
        try:
            first = await client.reset(task_id=TASK)
            page = await client.read_page()
            last = await client.step(BrowserAction(op="finish", text=ANSWER))
            return container_id, first, page, last
        finally:
            await client.close()

    container_id, first, page, last = asyncio.run(asyncio.wait_for(run(), 180))
    assert first.observation.metadata["task"]["id"] == TASK
    assert "Free workshop this Saturday" in page.text
    assert last.reward == 1.0
    assert inspect_container(container_id) is None


def test_a_given_token_is_used():
    client = BrowserClient.from_docker_image(IMAGE, token="given-token-for-the-image-test").sync()
    try:
        config = inspect_container(client.async_client._provider._container_id)
        assert "BROWSER_API_TOKEN=given-token-for-the-image-test" in config["Config"]["Env"]
        assert client.state().step_count == 0
    finally:
        client.close()
