"""The gestures through every face, on real Chromium (issue 41):

- the typed Python client (``browserenv.BrowserClient``): ``BrowserAction`` checks each new op
  before the wire, and a drag, a hover, chords and a dropdown's choice do on the page what they do;
- MCP: the official SDK over Streamable HTTP and OpenEnv's ``MCPToolClient`` call the gestures'
  tools (``drag``, ``press``, ``select``, ``move``, ...), bad arguments are tool errors;
- the Python model and the server say the same of the same bad action, word for word;
- a server started with ``--actions seed`` is the seed's: its schema, its tools, its errors.
"""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request

import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from openenv.core.mcp_client import MCPToolClient
from pydantic import ValidationError

import browser_client
from browserenv import BrowserAction, BrowserClient
from browserenv.models import OPS, SEED_OPS
from conftest import launch_server

_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def page(result) -> dict:
    """What the page recorded (its title, as JSON: assets/pages/*.html)."""
    return json.loads(result.observation.metadata["title"])


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with launch_server(["--max-sessions", "3"], tmp_path_factory.mktemp("gestures")) as url:
        yield url


@pytest.fixture(scope="module")
def seed_server(tmp_path_factory):
    with launch_server(["--actions", "seed", "--max-sessions", "2"], tmp_path_factory.mktemp("seed")) as url:
        yield url


def post(url: str, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        with _NO_PROXY.open(request, timeout=30) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def get(url: str) -> dict:
    with _NO_PROXY.open(url, timeout=10) as response:
        return json.load(response)


# --------------------------------------------------------------------------- the typed client


def test_the_typed_client_drags_hovers_chooses_and_presses(server, pages_url):
    with BrowserClient(base_url=server).sync() as browser:
        browser.reset(start_url=f"{pages_url}shop.html")
        chosen = browser.step(BrowserAction(op="select", x=180, y=68, text="Price: low to high"))
        assert page(chosen)["events"] == ["input:price-asc:true", "change:price-asc:true"]
        slid = browser.step(BrowserAction(op="drag", path=[(620, 68), (560, 68), (520, 68), (420, 68)]))
        assert page(slid)["max"] == 100
        # A dropdown drawn and chosen from with the pointer and the keys. Drawn in the very
        # picture of the click, under the server's default screenshots (`frame`): the popup is
        # drawn just before the picture, which a frame the compositor already had would miss.
        before = browser.step(BrowserAction(op="wait")).observation.screenshot
        opened = browser.step(BrowserAction(op="click", x=180, y=68)).observation.screenshot
        assert opened != before, "the open dropdown is in the click's picture"
        again = browser.step(BrowserAction(op="wait")).observation.screenshot
        assert again == opened, "and stays drawn while open"
        browser.step(BrowserAction(op="press", text="down", repeat=1))
        done = browser.step(BrowserAction(op="press", text="ENTER"))
        assert page(done)["sort"] == "price-desc"

        browser.reset(start_url=f"{pages_url}board.html")
        moved = browser.step({"op": "drag", "path": [[100, 148], [120, 150], [640, 300]]})
        assert page(moved)["done"] == ["mow"], page(moved)

        browser.reset(start_url=f"{pages_url}menu.html")
        hovered = browser.step(BrowserAction(op="move", x=70, y=20))
        assert page(hovered)["mega"] is True
        edited = browser.step(BrowserAction(op="click", x=60, y=250, count=2))
        assert page(edited)["editing"] is True
        menu = browser.step(BrowserAction(op="click", x=100, y=400, button="right"))
        assert page(menu)["ctx"] == [100, 400]

        browser.reset(start_url=f"{pages_url}files.html")
        browser.step(BrowserAction(op="click", x=100, y=105))
        ranged = browser.step(BrowserAction(op="click", x=100, y=195, modifiers=["SHIFT"]))
        assert page(ranged)["selected"] == [1, 2, 3, 4]

        browser.reset(start_url=f"{pages_url}editor.html")
        browser.step(BrowserAction(op="click", x=100, y=94))
        browser.step(BrowserAction(op="key", text="CTRL+A"))
        browser.step(BrowserAction(op="press", text="CTRL+C"))
        browser.step(BrowserAction(op="click", x=340, y=94))
        pasted = browser.step(BrowserAction(op="press", text="CTRL+V"))
        assert page(pasted)["to"] == "copy me please"
        boxed = browser.step(BrowserAction(op="scroll", x=600, y=300, dy=200))
        assert (page(boxed)["box"], page(boxed)["page"]) == (200, 0)
        went = browser.step(BrowserAction(op="goto", url=f"{pages_url}files.html"))
        assert went.observation.url == f"{pages_url}files.html"
        back = browser.step(BrowserAction(op="back"))
        forward = browser.step(BrowserAction(op="forward"))
        assert back.observation.url.endswith("editor.html") and forward.observation.url.endswith("files.html")
        # Refused by the server's rule (the reset's): an execution error naming the field.
        with pytest.raises(RuntimeError, match="url: expected an HTTP"):
            browser.step(BrowserAction(op="goto", url="file:///etc/passwd"))
        assert browser.state().step_count == 14 - 5, "a refused goto is not a step"


def test_the_model_refuses_bad_gestures_before_the_wire():
    for fields, words in [
        ({"op": "drag", "path": [(0, 0), (800, 10)]}, "path.1.0\n  Input should be less than 800"),
        ({"op": "drag", "path": [(1, 1)] * 65}, "at most 64 items"),
        ({"op": "drag", "path": [(1, 1)]}, "at least 2 items"),
        ({"op": "press", "text": "CTRL+FOO"}, 'unknown key "FOO"'),
        ({"op": "press", "text": "TAB", "repeat": 21}, "less than or equal to 20"),
        ({"op": "select", "x": 1, "y": 1}, "select needs text"),
        ({"op": "move", "x": 1}, "move needs both x and y"),
        ({"op": "type", "text": "a", "button": "left"}, "button is not a field of type"),
        ({"op": "forward", "url": "https://a.example/"}, "url is not a field of forward"),
        ({"op": "goto"}, "goto needs url"),
        ({"op": "click", "x": 1, "y": 1, "modifiers": ["HYPER"]}, "Input should be 'SHIFT', 'CTRL', 'ALT' or 'META'"),
    ]:
        with pytest.raises(ValidationError) as refused:
            BrowserAction(**fields)
        assert words in str(refused.value), (fields, str(refused.value))
    # The seed's seven dump as the seed's; an added op dumps its own fields besides.
    assert BrowserAction(op="click", x=1, y=2).model_dump() == {
        "metadata": {}, "op": "click", "x": 1, "y": 2, "text": "", "dy": 0,
    }
    assert BrowserAction(op="drag", path=[(1, 2), (3, 4)]).model_dump()["path"] == [(1, 2), (3, 4)]
    assert set(SEED_OPS) < set(OPS)


# The same bad actions, the Python model's errors and the server's (HTTP 422, FastAPI's locations).
PARITY = [
    {"op": "drag", "path": [[0, 0], [800, 600]]},
    {"op": "drag", "path": [[-1, 2], [3, 4, 5]]},
    {"op": "drag", "path": [["a"], {"x": 1}]},
    {"op": "drag", "path": [[1, 2]]},
    {"op": "drag", "path": [[1, 2]] * 65},
    {"op": "drag", "path": "0,0 1,1"},
    {"op": "drag"},
    {"op": "press", "text": "CTRL+FOO"},
    {"op": "press", "text": "A+B"},
    {"op": "press", "text": "CTRL++"},
    {"op": "press", "text": "shift+SHIFT+a"},
    {"op": "press"},
    {"op": "press", "text": "TAB", "repeat": 0},
    {"op": "click", "x": 1, "y": 1, "button": "Left", "count": 4},
    {"op": "click", "x": 1, "y": 1, "modifiers": ["SHIFT", "hyper"]},
    {"op": "click", "x": 1, "y": 1, "modifiers": ["SHIFT"] * 5},
    {"op": "move", "x": 1, "y": 2, "text": "hi", "dy": 3, "url": "u"},
    {"op": "forward", "x": 0},
    {"op": "type", "text": "a", "button": "left", "repeat": 2},
    {"op": "scroll", "dx": -1201},
    {"op": "scroll", "count": 2},
    {"op": "select", "x": 1},
    {"op": "select", "x": 1, "y": 1},
    {"op": "goto", "url": 5},
    {"op": "goto"},
    {"op": "hover", "x": 1, "y": 1},
]


@pytest.mark.parametrize("action", PARITY, ids=lambda a: json.dumps(a)[:60])
def test_the_model_and_the_server_say_the_same_words(server, action):
    with pytest.raises(ValidationError) as refused:
        BrowserAction(**action)
    ours = [(e["type"], list(e["loc"]), e["msg"]) for e in refused.value.errors(include_url=False)]
    status, body = post(f"{server}/step", {"action": action})
    assert status == 422, body
    theirs = [(e["type"], e["loc"][2:], e["msg"]) for e in body["detail"]]
    assert ours == theirs


# --------------------------------------------------------------------------- MCP


def test_the_mcp_sdk_calls_the_gesture_tools(server, pages_url):
    async def run():
        async with streamable_http_client(f"{server}/mcp") as (read, write, _):
            async with ClientSession(read, write) as session:
                await session.initialize()
                listed = await session.list_tools()
                names = [tool.name for tool in listed.tools]
                assert names[1 : 1 + len(OPS)] == list(OPS)
                drag = next(tool for tool in listed.tools if tool.name == "drag")
                assert drag.inputSchema["properties"]["path"]["maxItems"] == 64
                await session.call_tool("reset", {"start_url": f"{pages_url}shop.html"})
                chosen = await session.call_tool("select", {"x": 180, "y": 68, "label": "Best rated"})
                assert json.loads(chosen.structuredContent["title"])["sort"] == "rating"
                slid = await session.call_tool("drag", {"path": [[620, 68], [500, 68], [470, 68]]})
                assert json.loads(slid.structuredContent["title"])["max"] == 150
                missing = await session.call_tool("select", {"x": 180, "y": 68, "label": "Cheapest"})
                assert missing.structuredContent["error"] == "action_failed"
                assert "its options: \"Relevance\"" in missing.structuredContent["error_detail"]
                outside = await session.call_tool("drag", {"path": [[0, 0], [800, 0]]})
                assert outside.isError and "path.1.0: Input should be less than 800" in outside.content[0].text
                chord = await session.call_tool("press", {"keys": "CTRL+NOPE"})
                assert chord.isError and 'unknown key "NOPE"' in chord.content[0].text
                refused = await session.call_tool("goto", {"url": "javascript:alert(1)"})
                assert refused.isError and "url: expected an HTTP(S) URL" in refused.content[0].text
                await session.call_tool("goto", {"url": f"{pages_url}menu.html"})
                hovered = await session.call_tool("move", {"x": 70, "y": 20})
                assert json.loads(hovered.structuredContent["title"])["mega"] is True
                edited = await session.call_tool("click", {"x": 60, "y": 250, "count": 2})
                assert json.loads(edited.structuredContent["title"])["editing"] is True
                typed = await session.call_tool("press", {"keys": "END"})
                assert not typed.isError
                return (await session.call_tool("finish", {})).structuredContent

    done = asyncio.run(asyncio.wait_for(run(), 120))
    assert done["done"] is True


def test_openenv_mcp_tool_client_calls_the_gesture_tools(server, pages_url):
    async def run():
        async with MCPToolClient(base_url=server) as env:
            await env.reset(start_url=f"{pages_url}board.html")
            moved = await env.call_tool("drag", path=[[360, 100], [380, 110], [640, 200]])
            assert json.loads(moved["title"])["done"] == ["shed"]
            await env.call_tool("goto", url=f"{pages_url}editor.html")
            await env.call_tool("click", x=560, y=154)
            back = await env.call_tool("press", keys="SHIFT+TAB", repeat=2)
            assert json.loads(back["title"])["focus"] == "a"
            with pytest.raises(RuntimeError, match="Input should be less than 600"):
                await env.call_tool("move", x=0, y=600)
            return await env.state()

    state = asyncio.run(asyncio.wait_for(run(), 120))
    assert state.step_count == 4


# --------------------------------------------------------------------------- a seed server


def test_a_seed_server_is_the_seed_s(seed_server, pages_url):
    schema = get(f"{seed_server}/schema")["action"]
    assert sorted(schema["properties"]) == ["dy", "metadata", "op", "text", "x", "y"]
    assert tuple(schema["properties"]["op"]["enum"]) == SEED_OPS
    openapi = get(f"{seed_server}/openapi.json")
    assert openapi["components"]["schemas"]["BrowserAction"] == schema
    tools = post(f"{seed_server}/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})[1]
    assert [t["name"] for t in tools["result"]["tools"]][1:8] == list(SEED_OPS)
    status, body = post(f"{seed_server}/step", {"action": {"op": "drag", "path": [[1, 2], [3, 4]]}})
    assert status == 422
    assert [(e["type"], e["loc"], e["msg"]) for e in body["detail"]] == [
        ("literal_error", ["body", "action", "op"],
         "Input should be 'click', 'type', 'key', 'scroll', 'back', 'wait' or 'finish'"),
        ("extra_forbidden", ["body", "action", "path"], "Extra inputs are not permitted"),
    ]
    # The seed's own typed client drives it as it drove the seed.
    with browser_client.BrowserClient(base_url=seed_server).sync() as browser:
        browser.reset(start_url=f"{pages_url}files.html")
        clicked = browser.step(browser_client.BrowserAction(op="click", x=100, y=105))
        assert page(clicked)["selected"] == [1]
        with pytest.raises(RuntimeError, match="literal_error|Input should be 'click'"):
            browser.step(BrowserAction(op="move", x=1, y=1))
