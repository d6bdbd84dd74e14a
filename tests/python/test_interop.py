"""Unmodified OpenEnv 0.10.0 clients against the Rust browserenv-server.

The typed ``BrowserClient`` (the seed's client) and ``GenericEnvClient`` must
work, sync and async, exactly as against the Python reference server; and
``openenv validate --url`` must pass. See docs/wire.md.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import pytest
from openenv.core import GenericEnvClient
from pydantic import ValidationError

from browser_client import BrowserClient
from browser_models import BrowserAction, BrowserObservation, BrowserState
from conftest import png_size
OBSERVATION_KEYS = {"metadata", "screenshot", "url", "error"}


# --------------------------------------------------------------------------- helpers

# Talk to the local server directly, whatever proxy the environment configures.
_NO_PROXY_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def http_get(url: str, timeout: float = 5.0):
    return _NO_PROXY_OPENER.open(url, timeout=timeout)



def page_title(metadata: dict | None) -> str | None:
    """The page title if the server reports it in observation.metadata."""
    if not metadata:
        return None
    for key in ("title", "page_title"):
        value = metadata.get(key)
        if isinstance(value, str):
            return value
    return None


def assert_ok(result, url: str | None = None, done: bool = False) -> None:
    """A typed StepResult for a successful action."""
    obs = result.observation
    assert isinstance(obs, BrowserObservation)
    assert obs.error == "", f"unexpected error {obs.error!r} at {obs.url}"
    assert result.done is done
    assert obs.done is done
    assert result.reward == 0
    assert png_size(obs.screenshot) == (800, 600)
    if url is not None:
        assert obs.url == url


def server_max_steps() -> int:
    args = shlex.split(os.environ.get("BROWSERENV_SERVER_ARGS", ""))
    for i, arg in enumerate(args):
        if arg == "--max-steps" and i + 1 < len(args):
            return int(args[i + 1])
        if arg.startswith("--max-steps="):
            return int(arg.split("=", 1)[1])
    return 20


def open_session(server_url: str, timeout_s: float = 10.0):
    """A connected sync BrowserClient, retrying while a closed session's slot is
    still being released (CAPACITY_REACHED)."""
    deadline = time.monotonic() + timeout_s
    while True:
        client = BrowserClient(base_url=server_url).sync()
        client.connect()
        try:
            client.state()
            return client
        except RuntimeError as exc:
            client.close()
            if "CAPACITY_REACHED" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


# ------------------------------------------------------------------ models (no server)


def test_models_serialise_like_the_seed():
    action = BrowserAction(op="scroll", dy=500)
    assert action.model_dump() == {
        "metadata": {},
        "op": "scroll",
        "x": None,
        "y": None,
        "text": "",
        "dy": 500,
    }
    assert BrowserAction(op="key", text="CTRL+A").text == "CTRL+A"
    bad = [
        {"op": "click", "x": 1},
        {"op": "click", "x": 800, "y": 0},
        {"op": "click", "x": 0, "y": 600},
        {"op": "type"},
        {"op": "type", "text": "x" * 2001},
        {"op": "key", "text": "F5"},
        {"op": "scroll", "dy": 1201},
        {"op": "fly"},
        {"op": "wait", "extra": 1},
    ]
    for fields in bad:
        with pytest.raises(ValidationError):
            BrowserAction(**fields)


# ---------------------------------------------------------------- typed client, sync


def test_sync_typed_client_every_op(server_url, pages_url):
    form = pages_url + "form.html"
    with BrowserClient(base_url=server_url).sync() as env:
        result = env.reset(start_url=form)
        assert_ok(result, url=form)

        state = env.state()
        assert isinstance(state, BrowserState)
        assert isinstance(state.episode_id, str) and state.episode_id
        assert state.step_count == 0
        episode_id = state.episode_id

        # The input has autofocus; click it anyway, like an agent would.
        assert_ok(env.step(BrowserAction(op="click", x=250, y=115)), url=form)
        assert_ok(env.step(BrowserAction(op="type", text="hello interop")), url=form)
        result = env.step(BrowserAction(op="key", text="ENTER"))
        assert_ok(result)
        assert "result.html?q=hello+interop" in result.observation.url
        result_url = result.observation.url
        title = page_title(result.observation.metadata)
        if title is not None:
            assert title == "result: hello interop"

        assert_ok(env.step(BrowserAction(op="scroll", dy=300)), url=result_url)
        assert_ok(env.step(BrowserAction(op="scroll", dy=-300)), url=result_url)
        assert_ok(env.step(BrowserAction(op="back")), url=form)
        assert_ok(env.step(BrowserAction(op="wait")), url=form)

        state = env.state()
        assert state.episode_id == episode_id
        assert state.step_count == 7

        result = env.step(BrowserAction(op="finish"))
        assert_ok(result, url=form, done=True)
        state = env.state()
        assert state.episode_id == episode_id
        assert state.step_count == 8

        with pytest.raises(RuntimeError) as info:
            env.step(BrowserAction(op="wait"))
        assert "reset before stepping" in str(info.value)
        assert "EXECUTION_ERROR" in str(info.value)

        # A new reset starts over on the same connection.
        assert_ok(env.reset(start_url=form), url=form)
        assert env.state().step_count == 0


def test_ctrl_a_backspace_clears_an_input(server_url, pages_url):
    form = pages_url + "form.html"
    with BrowserClient(base_url=server_url).sync() as env:
        assert_ok(env.reset(start_url=form), url=form)
        assert_ok(env.step(BrowserAction(op="click", x=250, y=215)))
        assert_ok(env.step(BrowserAction(op="key", text="CTRL+A")))
        result = env.step(BrowserAction(op="key", text="BACKSPACE"))
        assert_ok(result, url=form)
        title = page_title(result.observation.metadata)
        if title is not None:
            assert title == "q=[] prefilled=[]"
        # TAB, ESCAPE and the arrows are accepted too.
        for key in ("TAB", "ESCAPE", "UP", "DOWN", "LEFT", "RIGHT"):
            assert_ok(env.step(BrowserAction(op="key", text=key)), url=form)


def test_reset_episode_id_seed_and_unknown_kwargs(server_url, pages_url):
    nav1 = pages_url + "nav1.html"
    with BrowserClient(base_url=server_url).sync() as env:
        state = env.state()
        assert state.episode_id is None
        assert state.step_count == 0

        result = env.reset(start_url=nav1, episode_id="e1", seed=7, unknown_option="ignored")
        assert_ok(result, url=nav1)
        state = env.state()
        assert state.episode_id == "e1"
        assert state.step_count == 0

        assert_ok(env.step(BrowserAction(op="click", x=200, y=50)), url=pages_url + "nav2.html")
        assert env.state().step_count == 1

        assert_ok(env.reset(start_url=nav1), url=nav1)
        state = env.state()
        assert state.episode_id != "e1"
        uuid.UUID(state.episode_id)  # a fresh uuid4 when none is given
        assert state.step_count == 0


def test_canvas_click_changes_the_screenshot(server_url, pages_url):
    canvas = pages_url + "canvas.html"
    with BrowserClient(base_url=server_url).sync() as env:
        before = env.reset(start_url=canvas)
        assert_ok(before, url=canvas)
        after = env.step(BrowserAction(op="click", x=123, y=456))
        assert_ok(after, url=canvas)
        assert after.observation.screenshot != before.observation.screenshot
        title = page_title(after.observation.metadata)
        if title is not None:
            assert title == "clicked 123,456"


def test_new_tabs_become_the_page(server_url, pages_url):
    with BrowserClient(base_url=server_url).sync() as env:
        assert_ok(env.reset(start_url=pages_url + "blank.html"))
        assert_ok(env.step(BrowserAction(op="click", x=200, y=50)), url=pages_url + "newtab.html")
        assert_ok(env.reset(start_url=pages_url + "newwindow.html"))
        assert_ok(env.step(BrowserAction(op="click", x=200, y=50)), url=pages_url + "newtab.html")


def test_dialogs_never_hang_a_step(server_url, pages_url):
    alert = pages_url + "alert.html"
    with BrowserClient(base_url=server_url).sync() as env:
        assert_ok(env.reset(start_url=alert), url=alert)
        for y in (50, 200, 350):  # alert, confirm, prompt
            result = env.step(BrowserAction(op="click", x=200, y=y))
            assert result.done is False
            assert result.observation.url == alert
            assert png_size(result.observation.screenshot) == (800, 600)
        assert env.state().step_count == 3


def test_download_and_javascript_links_keep_the_page(server_url, pages_url):
    with BrowserClient(base_url=server_url).sync() as env:
        download = pages_url + "download.html"
        assert_ok(env.reset(start_url=download), url=download)
        result = env.step(BrowserAction(op="click", x=200, y=50))
        assert result.done is False
        assert result.observation.url == download

        jslink = pages_url + "jslink.html"
        assert_ok(env.reset(start_url=jslink), url=jslink)
        result = env.step(BrowserAction(op="click", x=200, y=50))
        assert result.done is False
        assert result.observation.url.startswith("http://127.0.0.1:")


def test_bot_verification_page_ends_the_episode(server_url, pages_url):
    with BrowserClient(base_url=server_url).sync() as env:
        result = env.reset(start_url=pages_url + "cloudflare.html")
        if not result.done:  # detection may run after actions only, as in the seed
            result = env.step(BrowserAction(op="scroll", dy=0))
        assert result.done is True
        assert result.observation.done is True
        assert result.observation.error == "blocked_by_bot_verification"
        with pytest.raises(RuntimeError, match="reset before stepping"):
            env.step(BrowserAction(op="wait"))


def test_episode_ends_at_max_steps(server_url, pages_url):
    max_steps = server_max_steps()
    long_page = pages_url + "long.html"
    with BrowserClient(base_url=server_url).sync() as env:
        assert_ok(env.reset(start_url=long_page), url=long_page)
        for i in range(1, max_steps + 1):
            result = env.step(BrowserAction(op="scroll", dy=50))
            assert result.done is (i == max_steps), f"step {i}"
            assert result.observation.error == ""
        assert env.state().step_count == max_steps
        with pytest.raises(RuntimeError, match="reset before stepping"):
            env.step(BrowserAction(op="scroll", dy=50))


def test_pings_are_answered_during_a_slow_step(server_url, pages_url):
    # With a 0.5 s ping interval and a 1 s pong timeout the client drops the
    # socket unless the server answers pings while reset and `wait` run.
    client = BrowserClient(
        base_url=server_url, websocket_ping_interval_s=0.5, websocket_ping_timeout_s=1.0
    )
    long_page = pages_url + "long.html"
    with client.sync() as env:
        assert_ok(env.reset(start_url=long_page), url=long_page)
        assert_ok(env.step(BrowserAction(op="wait")), url=long_page)
        assert_ok(env.step(BrowserAction(op="scroll", dy=100)), url=long_page)


# --------------------------------------------------------------- typed client, async


def test_async_typed_client_every_op(server_url, pages_url):
    form = pages_url + "form.html"

    async def main():
        async with BrowserClient(base_url=server_url) as env:
            result = await env.reset(start_url=form, episode_id="async-1")
            assert_ok(result, url=form)
            state = await env.state()
            assert state.episode_id == "async-1"
            assert state.step_count == 0

            assert_ok(await env.step(BrowserAction(op="click", x=250, y=115)), url=form)
            assert_ok(await env.step(BrowserAction(op="type", text="async")), url=form)
            result = await env.step(BrowserAction(op="key", text="ENTER"))
            assert_ok(result)
            assert "result.html?q=async" in result.observation.url
            assert_ok(await env.step(BrowserAction(op="scroll", dy=200)))
            assert_ok(await env.step(BrowserAction(op="back")), url=form)
            assert_ok(await env.step(BrowserAction(op="wait")), url=form)
            result = await env.step(BrowserAction(op="finish"))
            assert_ok(result, url=form, done=True)
            state = await env.state()
            assert state.episode_id == "async-1"
            assert state.step_count == 7

    asyncio.run(main())


def test_async_sessions_are_independent(server_url, pages_url):
    nav1, form = pages_url + "nav1.html", pages_url + "form.html"

    async def main():
        async with BrowserClient(base_url=server_url) as a, BrowserClient(
            base_url=server_url
        ) as b:
            ra, rb = await asyncio.gather(
                a.reset(start_url=nav1, episode_id="a"),
                b.reset(start_url=form, episode_id="b"),
            )
            assert_ok(ra, url=nav1)
            assert_ok(rb, url=form)
            ra, rb = await asyncio.gather(
                a.step(BrowserAction(op="click", x=200, y=50)),
                b.step(BrowserAction(op="type", text="b")),
            )
            assert_ok(ra, url=pages_url + "nav2.html")
            assert_ok(rb, url=form)
            sa, sb = await asyncio.gather(a.state(), b.state())
            assert (sa.episode_id, sa.step_count) == ("a", 1)
            assert (sb.episode_id, sb.step_count) == ("b", 1)

    asyncio.run(main())


# --------------------------------------------------------------------- generic client


def test_generic_client_dict_flow(server_url, pages_url):
    nav1, nav2 = pages_url + "nav1.html", pages_url + "nav2.html"
    with GenericEnvClient(base_url=server_url).sync() as env:
        result = env.reset(start_url=nav1)
        obs = result.observation
        assert isinstance(obs, dict)
        assert {"screenshot", "url", "error"} <= set(obs) <= OBSERVATION_KEYS
        assert obs["url"] == nav1
        assert obs["error"] == ""
        assert png_size(obs["screenshot"]) == (800, 600)
        assert result.done is False
        assert result.reward == 0
        if result.metadata is not None:  # the top-level copy, when sent, matches
            assert result.metadata == obs.get("metadata")

        result = env.step({"op": "click", "x": 200, "y": 50})
        assert result.observation["url"] == nav2
        assert set(result.observation) <= OBSERVATION_KEYS
        # The typed model accepts what the server sent.
        BrowserObservation(**result.observation, done=result.done, reward=result.reward)

        result = env.step({"op": "back"})
        assert result.observation["url"] == nav1

        state = env.state()
        assert isinstance(state, dict)
        assert isinstance(state["episode_id"], str)
        assert state["step_count"] == 2

        result = env.step({"op": "finish"})
        assert result.done is True


BAD_ACTIONS = [
    {"op": "click", "x": 900, "y": 1},
    {"op": "click", "x": 5},
    {"op": "click", "x": -1, "y": 5},
    {"op": "type", "text": ""},
    {"op": "type", "text": "x" * 2001},
    {"op": "key", "text": "F5"},
    {"op": "scroll", "dy": 5000},
    {"op": "fly"},
    {"op": "wait", "bogus": 1},
    {"action": {"op": "wait"}},
    {},
]


def test_validation_errors_keep_the_session_usable(server_url, pages_url):
    long_page = pages_url + "long.html"
    with GenericEnvClient(base_url=server_url).sync() as env:
        env.reset(start_url=long_page)
        for action in BAD_ACTIONS:
            with pytest.raises(RuntimeError) as info:
                env.step(action)
            assert "VALIDATION_ERROR" in str(info.value), action
        result = env.step({"op": "scroll", "dy": 400})
        assert result.observation["error"] == ""
        assert result.observation["url"] == long_page
        assert env.state()["step_count"] == 1


def test_step_before_reset_is_an_execution_error(server_url, pages_url):
    with GenericEnvClient(base_url=server_url).sync() as env:
        state = env.state()
        assert state["episode_id"] is None
        assert state["step_count"] == 0
        with pytest.raises(RuntimeError) as info:
            env.step({"op": "wait"})
        assert "reset before stepping" in str(info.value)
        assert "EXECUTION_ERROR" in str(info.value)
        # Still usable.
        result = env.reset(start_url=pages_url + "nav1.html")
        assert result.observation["error"] == ""


def test_reset_rejects_non_http_urls(server_url, pages_url):
    bad_urls = [
        "file:///etc/passwd",
        "http://user:secret@127.0.0.1/",
        "http://user@127.0.0.1/",
        "chrome://version",
        "javascript:alert(1)",
        "ftp://127.0.0.1/",
        "http://",
    ]
    with GenericEnvClient(base_url=server_url).sync() as env:
        for url in bad_urls:
            with pytest.raises(RuntimeError) as info:
                env.reset(start_url=url)
            assert "EXECUTION_ERROR" in str(info.value), url
        result = env.reset(start_url=pages_url + "nav1.html")
        assert result.observation["url"] == pages_url + "nav1.html"


# ------------------------------------------------------------ sessions and capacity


def test_close_ends_the_session(server_url, pages_url):
    env = BrowserClient(base_url=server_url).sync()
    env.connect()
    env.reset(start_url=pages_url + "nav1.html", episode_id="closing")
    env.close()  # sends {"type": "close"} then closes the socket
    fresh = open_session(server_url)
    try:
        state = fresh.state()
        assert state.episode_id is None
        assert state.step_count == 0
    finally:
        fresh.close()


def test_capacity_reached_then_released(server_url):
    sessions = []
    try:
        for _ in range(3):  # the fixture starts the server with --max-sessions 3
            sessions.append(open_session(server_url))
        extra = BrowserClient(base_url=server_url).sync()
        extra.connect()  # the upgrade is accepted ...
        try:
            with pytest.raises(RuntimeError) as info:
                extra.state()  # ... and CAPACITY_REACHED arrives at once
            assert "CAPACITY_REACHED" in str(info.value)
        finally:
            extra.close()
        sessions.pop().close()
        sessions.append(open_session(server_url))
    finally:
        for session in sessions:
            session.close()


# ------------------------------------------------------------------- raw WebSocket


def test_raw_websocket_frames(server_url):
    from websockets.sync.client import connect

    ws_url = server_url.replace("http://", "ws://", 1) + "/ws"
    with connect(ws_url, proxy=None, open_timeout=10) as ws:

        def ask(text: str) -> dict:
            ws.send(text)
            return json.loads(ws.recv(timeout=30))

        reply = ask("{not json")
        assert reply["type"] == "error" and reply["data"]["code"] == "INVALID_JSON"

        reply = ask(json.dumps({"type": "nope"}))
        assert reply["type"] == "error" and reply["data"]["code"] == "UNKNOWN_TYPE"
        assert reply["data"]["message"] == "Unknown message type: nope"

        reply = ask(json.dumps({"type": "state", "extra": 1}))
        assert reply["type"] == "error" and reply["data"]["code"] == "VALIDATION_ERROR"

        reply = ask(json.dumps({"type": "step", "data": {"op": "click", "x": 900, "y": 1}}))
        assert reply["data"]["code"] == "VALIDATION_ERROR"
        errors = reply["data"]["errors"]
        assert isinstance(errors, list) and errors
        assert {"type", "loc", "msg"} <= set(errors[0])

        reply = ask(json.dumps({"type": "state"}))
        assert reply == {"type": "state", "data": {"episode_id": None, "step_count": 0}}

        ws.send(json.dumps({"type": "close"}))
        with pytest.raises(Exception):
            ws.recv(timeout=10)  # no reply: the server closes the socket
        assert ws.close_code == 1000


# ------------------------------------------------------------------- HTTP routes


def test_http_discovery_routes(server_url):
    with http_get(f"{server_url}/health") as response:
        assert json.load(response) == {"status": "healthy"}

    with http_get(f"{server_url}/metadata") as response:
        metadata = json.load(response)
    assert isinstance(metadata["name"], str) and isinstance(metadata["description"], str)

    with http_get(f"{server_url}/schema") as response:
        schema = json.load(response)
    assert {"op", "x", "y", "text", "dy", "metadata"} <= set(schema["action"]["properties"])
    assert {"screenshot", "url", "error"} <= set(schema["observation"]["properties"])
    assert {"episode_id", "step_count"} <= set(schema["state"]["properties"])

    request = urllib.request.Request(
        f"{server_url}/mcp",
        data=b"{}",
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with _NO_PROXY_OPENER.open(request, timeout=5) as response:
        assert response.status == 200
        reply = json.load(response)
    assert reply["jsonrpc"] == "2.0"
    assert "error" in reply


def openenv_cli() -> str:
    candidate = Path(sys.executable).parent / "openenv"
    if candidate.is_file():
        return str(candidate)
    found = shutil.which("openenv")
    if found is None:
        pytest.fail("the `openenv` CLI is not installed next to this Python")
    return found


def test_openenv_validate_passes(server_url):
    env = dict(os.environ)
    for name in ("NO_PROXY", "no_proxy"):
        env[name] = ",".join(filter(None, [env.get(name), "127.0.0.1", "localhost"]))
    proc = subprocess.run(
        [openenv_cli(), "validate", "--url", server_url, "--json"],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    report = json.loads(proc.stdout[proc.stdout.index("{") :])
    assert report["passed"] is True, output
    assert report["mode"] == "simulation", output
