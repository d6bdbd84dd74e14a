"""BROWSER_API_TOKEN: the unmodified Python client authenticates with its `headers=` argument."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import urllib.error
import urllib.request

import pytest
from openenv.core import GenericEnvClient

from conftest import server_binary

TOKEN = "interop-s3cret"


@pytest.fixture()
def guarded_server():
    process = subprocess.Popen(
        [str(server_binary()), "--port", "0", "--no-warm-spare"],
        env={**os.environ, "BROWSER_API_TOKEN": TOKEN},
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        yield re.search(r"(http://\S+)", process.stdout.readline()).group(1)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)


def test_headers_authenticate_the_python_client(guarded_server, pages_url):
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with GenericEnvClient(base_url=guarded_server, headers=headers).sync() as env:
        result = env.reset(start_url=f"{pages_url}/long.html")
        assert result.observation["url"].endswith("long.html")
        state = env.state()
        assert (state["step_count"] if isinstance(state, dict) else state.step_count) == 0


def test_without_the_token_the_client_is_refused(guarded_server):
    with pytest.raises(Exception) as refused:
        with GenericEnvClient(base_url=guarded_server).sync() as env:
            env.state()
    assert "401" in str(refused.value) or "401" in repr(refused.value.__cause__)


def test_health_stays_open_and_other_routes_answer_401_json(guarded_server):
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(f"{guarded_server}/health", timeout=5) as response:
        assert response.status == 200
    with pytest.raises(urllib.error.HTTPError) as denied:
        opener.open(f"{guarded_server}/metadata", timeout=5)
    assert denied.value.code == 401
    assert b'"UNAUTHORIZED"' in denied.value.read()
