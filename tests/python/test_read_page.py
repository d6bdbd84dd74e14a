"""Agents that read the page: every information task of the demo site solved by a scripted agent
(``text_agent.py``) that sees only the page's text in the compact form, clicks the centres of boxes
it found by their words and finishes with the answer it read; reward 1 each time.

- the official MCP SDK over Streamable HTTP, reading with the tool ``read_page``;
- OpenEnv's ``MCPToolClient``, reading with the same tool over OpenEnv's JSON-RPC;
- OpenEnv's WebSocket client (``GenericEnvClient``) on a server started with
  ``BROWSER_OBSERVE_TEXT=1``, reading ``metadata.text`` of each observation.

``read_page`` never steps the episode; the default server's observations have no text.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from openenv.core import GenericEnvClient
from openenv.core.mcp_client import MCPToolClient

from conftest import REPO_ROOT, launch_server
from text_agent import PLANS, CallDriver, parse, solve, transcript_text

SITE_ARGS = ["--site", "assets/site", "--tasks", "assets/tasks/demo.jsonl"]
TASKS = [
    json.loads(line)
    for line in (REPO_ROOT / "assets" / "tasks" / "demo.jsonl").read_text().splitlines()
    if line.strip()
]
INFORMATION = [t["id"] for t in TASKS if t["category"] in ("information", "lookup")]
NO_TEXT = "[no visible text]"


def show(run) -> None:
    """The run, for `pytest -s` (and for a failure's report)."""
    print(f"\n--- {run.task} ---\n{transcript_text(run)}")


def test_every_information_task_has_a_reading_plan():
    assert INFORMATION, "the demo task set has information tasks"
    assert sorted(PLANS) == sorted(INFORMATION)


@pytest.fixture(scope="module")
def site_server(tmp_path_factory):
    """A server with the demo site and its tasks; observations as the seed's (no text)."""
    with launch_server([*SITE_ARGS, "--max-sessions", "2"], tmp_path_factory.mktemp("read-page")) as url:
        yield url


def test_the_mcp_sdk_agent_reads_its_way_to_every_answer(site_server):
    async def run():
        async with streamable_http_client(f"{site_server}/mcp") as (read, write, _):
            async with ClientSession(read, write) as session:
                await session.initialize()
                listed = {tool.name: tool for tool in (await session.list_tools()).tools}
                tool = listed["read_page"]
                assert tool.annotations.readOnlyHint is True
                assert "x,y,w,h" in tool.description
                assert tool.inputSchema["properties"]["max_chars"]["maximum"] == 100000

                early = await session.call_tool("read_page", {})
                assert early.isError and "reset first" in early.content[0].text, early.content
                step = {"now": 0}

                async def reset(task_id):
                    result = await session.call_tool("reset", {"task_id": task_id})
                    assert not result.isError, result.content
                    # Observations stay the seed's unless the server is told otherwise.
                    assert "text" not in result.structuredContent["metadata"]
                    step["now"] = 0
                    return result.structuredContent

                async def act(tool, **arguments):
                    result = await session.call_tool(tool, arguments)
                    assert not result.isError, result.content
                    step["now"] = result.structuredContent["step"]
                    return result.structuredContent

                async def read_page():
                    result = await session.call_tool("read_page", {})
                    assert not result.isError, result.content
                    facts = result.structuredContent
                    assert facts["step"] == step["now"], "reading is not a step"
                    assert facts["truncated"] is False
                    assert [block.type for block in result.content] == ["text"]
                    assert result.content[0].text == (facts["text"] or NO_TEXT)
                    return facts["text"]

                driver = CallDriver(reset, act, read_page)
                runs = [await solve(driver, task) for task in INFORMATION]

                # A bound: whole lines, then the mark; a bad one is the model's to read.
                short = await session.call_tool("read_page", {"max_chars": 150})
                text = short.structuredContent["text"]
                assert short.structuredContent["truncated"] is True
                assert len(text) <= 150 and text.endswith("\n[truncated]"), text
                parse(text)
                bad = await session.call_tool("read_page", {"max_chars": 5})
                assert bad.isError
                assert bad.content[0].text == (
                    "Invalid message: max_chars: Input should be greater than or equal to 100"
                )
                return runs

    runs = asyncio.run(asyncio.wait_for(run(), 300))
    for run in runs:
        show(run)
        assert run.facts["done"] is True, run.facts
        assert run.facts["reward"] == 1.0, (run.task, run.answer, run.facts["metadata"].get("verdict"))


def test_openenv_mcp_tool_client_agent_reads_its_way_to_every_answer(site_server):
    async def run():
        async with MCPToolClient(base_url=site_server) as env:
            tools = await env.list_tools()
            assert "read_page" in [tool.name for tool in tools]

            async def reset(task_id):
                first = await env.reset(task_id=task_id)
                return {"done": first.done}

            async def act(tool, **arguments):
                return await env.call_tool(tool, **arguments)

            async def read_page():
                facts = await env.call_tool("read_page")
                assert "screenshot" not in facts
                assert facts["truncated"] is False
                return facts["text"]

            driver = CallDriver(reset, act, read_page)
            return [await solve(driver, task) for task in INFORMATION]

    runs = asyncio.run(asyncio.wait_for(run(), 300))
    for run in runs:
        show(run)
        assert run.facts["reward"] == 1.0, (run.task, run.answer, run.facts)


def test_openenv_ws_agent_reads_the_text_each_observation_carries(tmp_path, monkeypatch):
    monkeypatch.setenv("BROWSER_OBSERVE_TEXT", "1")
    with launch_server([*SITE_ARGS, "--max-sessions", "1"], tmp_path) as url:

        async def run():
            async with GenericEnvClient(base_url=url) as env:
                last = {}

                def facts(result):
                    observation = result.observation
                    metadata = observation["metadata"]
                    assert metadata["text_truncated"] is False
                    last["text"] = metadata["text"]
                    return {
                        "url": observation["url"],
                        "error": observation["error"],
                        "done": result.done,
                        "reward": result.reward,
                        "metadata": metadata,
                    }

                async def reset(task_id):
                    return facts(await env.reset(task_id=task_id))

                async def act(tool, **arguments):
                    action = {"op": tool}
                    if tool == "finish":
                        action["text"] = arguments["answer"]
                    else:
                        action.update(arguments)
                    return facts(await env.step(action))

                async def read_page():
                    return last["text"]

                driver = CallDriver(reset, act, read_page)
                return [await solve(driver, task) for task in INFORMATION]

        runs = asyncio.run(asyncio.wait_for(run(), 300))
    for run in runs:
        show(run)
        assert run.facts["reward"] == 1.0, (run.task, run.answer, run.facts["metadata"].get("verdict"))
