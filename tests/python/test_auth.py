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


def test_mcp_needs_the_token_too(guarded_server):
    import asyncio

    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from openenv.core.mcp_client import MCPToolClient
    import httpx

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    refused = urllib.request.Request(
        f"{guarded_server}/mcp",
        data=b'{"jsonrpc":"2.0","id":1,"method":"openenv/session/create","params":{}}',
        headers={"Content-Type": "application/json"},
    )
    with pytest.raises(urllib.error.HTTPError) as denied:
        opener.open(refused, timeout=5)
    assert denied.value.code == 401

    async def with_token():
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with httpx.AsyncClient(headers=headers, trust_env=False) as http:
            async with streamable_http_client(f"{guarded_server}/mcp", http_client=http) as (
                read,
                write,
                _,
            ):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    listed = await session.list_tools()
        async with MCPToolClient(base_url=guarded_server, headers=headers) as env:
            openenv_tools = await env.list_tools()
        return [t.name for t in listed.tools], [t.name for t in openenv_tools]

    mcp_tools, openenv_tools = asyncio.run(asyncio.wait_for(with_token(), 60))
    assert mcp_tools[0] == "reset" and openenv_tools == mcp_tools
