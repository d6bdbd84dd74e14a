"""Hand-off: an agent (OpenEnv's Python client) steps while a person at ``browserenv-tui watch``
takes control, acts twice and hands back; and an agent on the package's ``BrowserClient`` asks for
a person (``request_human``) whom a watch socket plays: it takes control, scrolls and hands back
with a note.

The person is the terminal UI's own event loop driven by a script (``tui/examples/take_over.rs``:
``c``, two ``:click`` commands, ``c``); a second watcher (``websockets``) records what watchers
see; the server records with ``--record-dir``.
"""

from __future__ import annotations

import json
import os
import asyncio
import subprocess
import threading
import time
from pathlib import Path

import pytest
from openenv.core import GenericEnvClient
from websockets.sync.client import connect

from browserenv import BrowserClient, HumanAnswer
from conftest import REPO_ROOT, http_get, launch_server

#: The server's bound on an agent's ``request_human`` wait (``--ask-wait``): every wait of the
#: test below comes from it.
ASK_WAIT_S = 30


def take_over_binary() -> Path:
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO_ROOT / "target"))
    if not target.is_absolute():
        target = REPO_ROOT / target
    binary = target / "debug" / "examples" / "take_over"
    if not binary.is_file():
        pytest.fail(f"{binary} is missing: run `cargo test --workspace` (it builds the examples) first")
    return binary


def watch_events(url: str, seen: list[dict], stop: threading.Event) -> None:
    """Collect every event frame of one watch socket until the session ends or `stop` is set."""
    with connect(url, max_size=None) as socket:
        while not stop.is_set():
            try:
                frame = json.loads(socket.recv(timeout=0.5))
            except TimeoutError:
                continue
            except Exception:  # the session ended: the socket closed
                return
            if frame["type"] == "event":
                seen.append(frame["data"])


def test_an_agent_steps_while_a_person_takes_over_acts_twice_and_hands_back(pages_url, tmp_path):
    record_dir = tmp_path / "recording"
    args = ["--record-dir", str(record_dir), "--handoff-wait", "30"]
    with launch_server(args, tmp_path) as server:
        with GenericEnvClient(base_url=server).sync() as env:
            env.reset(start_url=pages_url + "canvas.html", episode_id="handoff-py")
            with http_get(f"{server}/sessions") as response:
                session = json.load(response)[0]["id"]

            seen: list[dict] = []
            stop = threading.Event()
            watcher = threading.Thread(
                target=watch_events,
                args=(f"{server.replace('http', 'ws')}/sessions/{session}/watch", seen, stop),
                daemon=True,
            )
            watcher.start()
            for _ in range(100):
                if seen:
                    break
                threading.Event().wait(0.1)
            assert seen, "the watcher saw the session's current page"

            person = subprocess.Popen(
                [
                    str(take_over_binary()),
                    "--server", server,
                    "--session", session,
                    "--command", "click 100 110",
                    "--command", "click 200 210",
                    "--hold-seconds", "1",
                ],
                stdout=subprocess.PIPE,
                text=True,
            )
            assert person.stdout is not None
            said = []
            for line in person.stdout:
                said.append(json.loads(line))
                if said[-1]["event"] == "in_control":
                    break
            assert said[-1]["event"] == "in_control", said

            # The agent steps while the person holds control: its step waits for the hand-back.
            result = env.step({"op": "click", "x": 30, "y": 40})
            for line in person.stdout:
                said.append(json.loads(line))
            assert person.wait(timeout=60) == 0, said
            state = env.state()

            metadata = result.observation["metadata"]
            assert metadata["title"] == "clicked 30,40"
            assert metadata["step"] == 3
            assert "control" not in metadata
            assert [(s["step"], s["action"]["op"], s["action"]["x"]) for s in metadata["human_steps"]] == [
                (1, "click", 100),
                (2, "click", 200),
            ]
            assert all(s["error"] == "" and s["url"].endswith("canvas.html") for s in metadata["human_steps"])
            assert state["step_count"] == 3

        events = [event["event"] for event in said]
        assert events == ["watching", "in_control", "stepped", "stepped", "handed_back", "agent_stepped", "screen"], said
        assert [s["title"] for s in said if s["event"] == "stepped"] == ["clicked 100,110", "clicked 200,210"]
        screen = said[-1]["text"]
        assert "agent in control" in screen, screen

        stop.set()
        watcher.join(timeout=10)
        kinds = [
            f"control {e['control']['actor']}" if e["kind"] == "control" else f"{e['kind']} {e['actor']}"
            for e in seen
        ]
        assert kinds == ["reset agent", "control human", "step human", "step human", "control agent", "step agent"], kinds
        human_named = [e["control"] for e in seen if e["kind"] == "step" and e["actor"] == "human"]
        assert all(c["actor"] == "human" and c["name"] for c in human_named), human_named

    steps = [json.loads(line) for line in (record_dir / "steps.jsonl").read_text().splitlines()]
    assert [(s["episode_id"], s["step"], s["actor"]) for s in steps] == [
        ("handoff-py", 1, "human"),
        ("handoff-py", 2, "human"),
        ("handoff-py", 3, "agent"),
    ]
    assert [s["action"]["x"] for s in steps] == [100, 200, 30]
    episodes = [json.loads(line) for line in (record_dir / "episodes.jsonl").read_text().splitlines()]
    assert [e["episode_id"] for e in episodes] == ["handoff-py"]


def answer_the_ask(url: str, note: str, said: list, patience: float) -> None:
    """A person at a watch socket: waits (at most ``patience`` for each frame) for the agent to
    ask, takes control, scrolls, and hands back with ``note``. What it saw goes into ``said``
    (an exception too, for the test to raise)."""
    try:
        with connect(url, max_size=None) as socket:

            def next_frame(wanted):
                deadline = time.monotonic() + patience
                while True:
                    frame = json.loads(socket.recv(timeout=max(0.0, deadline - time.monotonic())))
                    if wanted(frame):
                        return frame

            asking = next_frame(lambda f: f["type"] == "event" and (f["data"].get("control") or {}).get("asking"))
            said.append(asking["data"]["control"]["asking"])
            socket.send(json.dumps({"type": "take", "data": {"name": "ana"}}))
            said.append(next_frame(lambda f: f["type"] in ("control", "error"))["data"])
            socket.send(json.dumps({"type": "step", "data": {"op": "scroll", "dy": 300}}))
            said.append(next_frame(lambda f: f["type"] in ("observation", "error"))["type"])
            socket.send(json.dumps({"type": "release", "data": {"note": note}}))
            said.append(next_frame(lambda f: f["type"] == "control")["data"])
    except Exception as err:  # noqa: BLE001 - handed to the test's thread
        said.append(err)


def test_the_client_asks_for_a_person_and_gets_their_note_and_steps(pages_url, tmp_path):
    reason = "please accept the cookies for me"
    note = "accepted\nthe cookies"
    with launch_server(["--ask-wait", str(ASK_WAIT_S)], tmp_path) as server:
        with BrowserClient(base_url=server).sync() as browser:
            browser.reset(start_url=pages_url + "canvas.html", episode_id="ask-py")
            with http_get(f"{server}/sessions") as response:
                session = next(s["id"] for s in json.load(response) if s["episode_id"] == "ask-py")
            said: list = []
            person = threading.Thread(
                target=answer_the_ask,
                args=(f"{server.replace('http', 'ws')}/sessions/{session}/watch", note, said, ASK_WAIT_S),
                daemon=True,
            )
            person.start()
            answer = browser.request_human(reason, wait_seconds=ASK_WAIT_S)
            person.join(timeout=ASK_WAIT_S)
            assert not any(isinstance(s, Exception) for s in said), said

            assert isinstance(answer, HumanAnswer)
            assert said[0]["reason"] == reason
            assert said[1] == {"control": "human", "name": "ana", "yours": True}
            assert said[2] == "observation"
            assert (answer.human, answer.human_note) == ("ana", "accepted the cookies")
            assert [(s["step"], s["action"]["op"], s["action"]["dy"]) for s in answer.human_steps] == [(1, "scroll", 300)]
            assert answer.observation.url.endswith("canvas.html") and answer.observation.screenshot
            assert (answer.episode_id, answer.step) == ("ask-py", 1)
            assert browser.state().step_count == 1

        async def nobody_answers():
            async with BrowserClient(base_url=server) as browser:
                await browser.reset(start_url=pages_url + "canvas.html")
                await browser.request_human("anyone?", wait_seconds=1)

        with pytest.raises(RuntimeError, match="no person took control within 1 s"):
            asyncio.run(asyncio.wait_for(nobody_answers(), ASK_WAIT_S))
