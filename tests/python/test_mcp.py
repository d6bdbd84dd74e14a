"""MCP with clients nobody here wrote, against the real server and real Chromium:

- the official MCP Python SDK (``mcp``) over stdio (``browserenv-server mcp``) and over Streamable
  HTTP (``/mcp``): 1.x, the version OpenEnv's stack installs, in this venv, and the newest 2.x in a
  venv of its own (``MCP2_PYTHON``, made by ``make venv``), through ``mcp2_client.py``;
- OpenEnv's ``MCPToolClient`` (``openenv==0.10.0``), which speaks OpenEnv's own JSON-RPC on
  ``/mcp`` and drives the same session over ``/ws?session_id=``.

Each initializes, lists the tools, clicks on the demo site, reads the screenshot, and finishes a
task with reward 1.0; MCP sessions are counted, listed, recorded and closed like any other.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
from pathlib import Path

import pytest
import websockets
from mcp import ClientSession, McpError, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from openenv.core.mcp_client import MCPToolClient

from conftest import HERE, REPO_ROOT, http_get, launch_server, png_size, server_binary

SITE_ARGS = ["--site", "assets/site", "--tasks", "assets/tasks/demo.jsonl"]
TASK, ANSWER = "info-workshop-time", "10:00"
# "Browse the catalog" on the demo site's home page.
CATALOG_LINK = {"x": 312, "y": 235}
TOOLS = [
    "reset", "click", "type", "key", "scroll", "back", "wait", "finish",
    "move", "drag", "mouse_down", "mouse_up", "press", "select", "forward", "goto",
    "read_page", "capture", "request_human",
]


def sessions(base_url: str) -> list[dict]:
    with http_get(f"{base_url}/sessions") as response:
        return json.loads(response.read())


def post_status(url: str, body: bytes, headers: dict) -> int:
    import urllib.error
    import urllib.request

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(urllib.request.Request(url, data=body, headers=headers), timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as error:
        return error.code


def wait_until(check, what: str, timeout: float = 10.0):
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


@pytest.fixture(scope="module")
def mcp_server(tmp_path_factory):
    """A server with the demo site and its tasks, two sessions at most, recording."""
    record = tmp_path_factory.mktemp("mcp-record")
    args = [*SITE_ARGS, "--max-sessions", "2", "--record-dir", str(record)]
    with launch_server(args, tmp_path_factory.mktemp("mcp-server")) as url:
        yield url, record


async def drive(session: ClientSession) -> dict:
    """The whole flow on an initialized MCP session; returns the finishing call's facts."""
    listed = await session.list_tools()
    assert [tool.name for tool in listed.tools] == TOOLS
    click = next(tool for tool in listed.tools if tool.name == "click")
    assert click.inputSchema["properties"]["x"]["exclusiveMaximum"] == 800
    assert click.inputSchema["required"] == ["x", "y"]
    assert "800x600" in click.description

    first = await session.call_tool("reset", {"task_id": TASK})
    assert not first.isError, first.content
    assert first.structuredContent["url"].endswith("/index.html")
    assert first.structuredContent["done"] is False
    image = next(block for block in first.content if block.type == "image")
    assert image.mimeType == "image/png"
    assert png_size(image.data) == (800, 600)

    clicked = await session.call_tool("click", CATALOG_LINK)
    assert not clicked.isError, clicked.content
    assert clicked.structuredContent["url"].endswith("/catalog.html"), clicked.structuredContent
    assert clicked.structuredContent["step"] == 1
    text = next(block for block in clicked.content if block.type == "text")
    assert json.loads(text.text)["url"] == clicked.structuredContent["url"]

    bad = await session.call_tool("click", {"x": 800, "y": 0})
    assert bad.isError
    assert bad.content[0].text == "Invalid message: x: Input should be less than 800"
    with pytest.raises(McpError) as unknown:
        await session.call_tool("fly", {})
    assert unknown.value.error.code == -32602

    back = await session.call_tool("back", {})
    assert back.structuredContent["url"].endswith("/index.html")
    done = await session.call_tool("finish", {"answer": ANSWER})
    assert not done.isError, done.content
    return done.structuredContent


def test_the_mcp_sdk_over_stdio_finishes_a_task():
    params = StdioServerParameters(
        command=str(server_binary()), args=["mcp", *SITE_ARGS], cwd=str(REPO_ROOT)
    )

    async def run():
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                hello = await session.initialize()
                assert hello.serverInfo.name == "browserenv"
                assert "800x600" in (hello.instructions or "")
                return await drive(session)

    facts = asyncio.run(asyncio.wait_for(run(), 120))
    assert facts["done"] is True
    assert facts["reward"] == 1.0


def test_the_mcp_sdk_over_streamable_http_is_a_session_like_any_other(mcp_server):
    base_url, record = mcp_server

    async def run():
        async with streamable_http_client(f"{base_url}/mcp") as (read, write, mcp_session_id):
            async with ClientSession(read, write) as session:
                await session.initialize()
                assert mcp_session_id()
                listed = sessions(base_url)
                assert [s["transport"] for s in listed] == ["mcp"], listed
                # It holds one of the two slots: a second WebSocket session is still let in,
                # a third is refused.
                async with websockets.connect(f"{base_url.replace('http', 'ws')}/ws") as second:
                    await second.send(json.dumps({"type": "state"}))
                    assert json.loads(await second.recv())["type"] == "state"
                    async with websockets.connect(f"{base_url.replace('http', 'ws')}/ws") as third:
                        refused = json.loads(await third.recv())
                        assert refused["data"]["code"] == "CAPACITY_REACHED", refused
                # Watchable like any other: a watcher sees its steps as they happen.
                watch_url = f"{base_url.replace('http', 'ws')}/sessions/{listed[0]['id']}/watch"
                async with websockets.connect(watch_url, max_size=None) as watcher:
                    facts = await drive(session)
                    seen = []
                    while "finish" not in seen:
                        event = json.loads(await asyncio.wait_for(watcher.recv(), 30))
                        if event["data"]["kind"] == "step":
                            seen.append(event["data"]["action"]["op"])
                assert seen == ["click", "back", "finish"], seen
                return facts, listed[0]["id"], mcp_session_id()

    facts, session_id, mcp_session_id = asyncio.run(asyncio.wait_for(run(), 120))
    assert facts["reward"] == 1.0
    # A call without initialize, and one on the session that is gone: HTTP errors, nothing else
    # is touched.
    streamable = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    listing = b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}'
    assert post_status(f"{base_url}/mcp", listing, streamable) == 400
    gone = {**streamable, "Mcp-Session-Id": mcp_session_id}
    wait_until(lambda: post_status(f"{base_url}/mcp", listing, gone) == 404, "the MCP session to go")
    # The client's DELETE ended the session: it leaves the list, and its episode is on disk.
    wait_until(lambda: not sessions(base_url), "the MCP session to end")
    wait_until(lambda: (record / "episodes.jsonl").exists(), "the episode line")
    episodes = [json.loads(line) for line in (record / "episodes.jsonl").read_text().splitlines()]
    ours = [e for e in episodes if e.get("task") == TASK and e["actor"] == "agent"]
    assert ours and ours[-1]["outcome"] == "finished", episodes
    steps = [json.loads(line) for line in (record / "steps.jsonl").read_text().splitlines()]
    mine = [s for s in steps if s["episode_id"] == ours[-1]["episode_id"]]
    assert [s["action"]["op"] for s in mine] == ["click", "back", "finish"]
    assert mine[-1]["reward"] == 1.0
    assert session_id.startswith("mcp-")


def test_the_newest_mcp_sdk_falls_back_to_a_session_and_finishes_a_task(mcp_server):
    base_url, _ = mcp_server
    python = Path(os.environ.get("MCP2_PYTHON", REPO_ROOT / ".venv-mcp2" / "bin" / "python"))
    assert python.is_file(), f"{python} is missing: `make venv` makes it (or set MCP2_PYTHON)"
    run = subprocess.run(
        [str(python), str(HERE / "mcp2_client.py"), f"{base_url}/mcp", TASK, ANSWER],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads(run.stdout.splitlines()[-1])
    assert report["sdk"].startswith("2."), report
    assert report["protocol"] == "2025-11-25"
    assert report["tools"] == TOOLS
    assert report["png"] == [800, 600]
    assert report["clicked_url"].endswith("/catalog.html")
    assert report["reward"] == 1.0


def test_openenv_mcp_tool_client_drives_the_same_session_over_ws_and_mcp(mcp_server):
    base_url, _ = mcp_server

    async def run():
        async with MCPToolClient(base_url=base_url) as env:
            session_id = env._production_session_id
            assert [s["id"] for s in sessions(base_url)] == [session_id]
            # reset over /ws?session_id=…, the tools over POST /mcp: one session.
            first = await env.reset(task_id=TASK)
            assert first.done is False
            tools = await env.list_tools()
            assert [tool.name for tool in tools] == TOOLS
            clicked = await env.call_tool("click", **CATALOG_LINK)
            assert clicked["url"].endswith("/catalog.html"), clicked
            assert png_size(clicked["screenshot"]) == (800, 600)
            assert clicked["step"] == 1
            with pytest.raises(RuntimeError, match="Input should be less than 800"):
                await env.call_tool("click", x=800, y=0)
            with pytest.raises(RuntimeError, match="Unknown tool"):
                await env.call_tool("fly")
            done = await env.call_tool("finish", answer=ANSWER)
            state = await env.state()
            return done, state, session_id

    done, state, session_id = asyncio.run(asyncio.wait_for(run(), 120))
    assert done["reward"] == 1.0 and done["done"] is True
    assert state.step_count == 2
    # `openenv/session/close` on leaving.
    wait_until(lambda: not sessions(base_url), f"session {session_id} to close")


def test_openenv_json_rpc_errors_leave_other_sessions_alone(mcp_server):
    base_url, _ = mcp_server

    def post(body: str) -> dict:
        import urllib.request

        request = urllib.request.Request(
            f"{base_url}/mcp", data=body.encode(), headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            assert response.status == 200
            return json.loads(response.read())

    created = post('{"jsonrpc":"2.0","id":1,"method":"openenv/session/create","params":{}}')
    session_id = created["result"]["session_id"]
    assert post("{nope")["error"]["code"] == -32700
    assert post('{"jsonrpc":"2.0","id":2}')["error"]["code"] == -32600
    gone = post('{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"wait","session_id":"x"}}')
    assert gone["error"] == {"code": -32602, "message": "Unknown session_id: x", "data": None}
    unknown = post('{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"fly","session_id":"%s"}}' % session_id)
    assert unknown["error"]["code"] == -32603
    early = post('{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"wait","session_id":"%s"}}' % session_id)
    assert "reset" in early["error"]["message"], early
    assert [s["id"] for s in sessions(base_url)] == [session_id]
    closed = post('{"jsonrpc":"2.0","id":6,"method":"openenv/session/close","params":{"session_id":"%s"}}' % session_id)
    assert closed["result"] == {"session_id": session_id, "closed": True}
    assert sessions(base_url) == []


def test_stopping_the_server_ends_open_mcp_sessions_at_once():
    import re
    import signal

    # The episode the MCP session runs gets the drain time (docs/deployment.md); then the server
    # gives the requests in flight 2 s (SHUTDOWN_GRACE) and cuts the rest.
    drain_s, grace_s = 1, 2
    server = subprocess.Popen(
        [str(server_binary()), "--port", "0", "--no-warm-spare", "--drain-seconds", str(drain_s)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    base_url = re.search(r"(http://\S+)", server.stdout.readline()).group(1)
    opened = asyncio.Event()

    async def hold():
        async with streamable_http_client(f"{base_url}/mcp") as (read, write, _):
            async with ClientSession(read, write) as session:
                await session.initialize()
                await session.call_tool("reset", {"start_url": f"{base_url}/health"})
                opened.set()
                await asyncio.sleep(60)

    async def run():
        holder = asyncio.create_task(hold())
        await asyncio.wait_for(opened.wait(), 60)
        started = time.monotonic()
        server.send_signal(signal.SIGTERM)
        await asyncio.get_running_loop().run_in_executor(None, server.wait, 30)
        took = time.monotonic() - started
        holder.cancel()
        return took

    try:
        took = asyncio.run(run())
    finally:
        if server.poll() is None:
            server.kill()
    # Its event stream does not hold the shutdown past the drain and the grace (and closing the
    # browser, well under 3 s).
    assert server.returncode == 0
    assert took < drain_s + grace_s + 3, f"the server took {took:.1f} s to stop"
