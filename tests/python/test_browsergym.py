"""BrowserGym's coordinate actions through ``browserenv.browsergym`` (issue 42), held to BrowserGym
itself (``browsergym-core``: its action set, its parser, its functions' signatures) and run on real
Chromium on ``assets/pages/computer.html``.
"""

from __future__ import annotations

import inspect
import json

import pytest
from browsergym.core.action import functions as bg_functions
from browsergym.core.action.highlevel import HighLevelActionSet
from browsergym.core.action.parsers import NamedArgument, highlevel_action_parser

from browserenv import BrowserClient
from browserenv.browsergym import DEFAULT_SUBSETS, SIGNATURES, CoordActions, parse
from conftest import launch_server

ACTION_SET = HighLevelActionSet(subsets=list(DEFAULT_SUBSETS), multiaction=True)


def theirs(text: str) -> list:
    """BrowserGym's own reading of an action (its non-strict parser)."""
    found = []
    for name, args in sum(highlevel_action_parser.search_string(text).as_list(), []):
        positional = tuple(a for a in args if not isinstance(a, NamedArgument))
        named = {a.name: a.value for a in args if isinstance(a, NamedArgument)}
        found.append((name, positional, named))
    return found


def ours(text: str) -> list:
    return [(call.name, call.args, call.kwargs) for call in parse(text)]


CORPUS = [
    "mouse_click(56, 712.56, 'right')\nkeyboard_type('Hello world!')\nmouse_click(887.2, 68)",
    "I'll click the button: mouse_click(10, 20)",
    "```python\nmouse_click(10, 20)\n```",
    "# think first\nmouse_click(1, 2)  # this one\n# mouse_click(3, 4)",
    'send_msg_to_user("It\'s 1751, they said \\"so\\"")',
    "mouse_upload_file(328, 812, ['/a.jpg', '/b.zip'])",
    "mouse_click(x=10, y=20, button='middle')",
    "mouse_click(10, y=20)",
    "f({'a': [1, 2.5, -3], 'b': (True, None)}, )",
    "The answer: mouse_click(1e2, .5)",
    "keyboard_type('''two\nlines''')",
    "mouse_click(10, 20 mouse_click(30, 40)",
    "x = mouse_click(1, 2)",
    "nothing to do here",
    "",
]


def test_every_action_of_browsergyms_coord_set_is_taken_with_its_signature():
    names = list(ACTION_SET.action_set)
    assert set(names) <= set(SIGNATURES), set(names) - set(SIGNATURES)
    for name in names:
        bg = inspect.signature(getattr(bg_functions, name))
        ours_ = inspect.signature(SIGNATURES[name])
        assert [(p.name, p.default) for p in bg.parameters.values()] == [
            (p.name, p.default) for p in ours_.parameters.values()
        ], name


@pytest.mark.parametrize("text", CORPUS + ACTION_SET.describe().splitlines(), ids=lambda t: t[:40])
def test_actions_are_read_as_browsergym_reads_them(text):
    assert ours(text) == theirs(text)


def test_a_bad_call_is_refused_in_pythons_words_as_browsergyms_exec_would():
    for text in ["mouse_click(10)", "mouse_click(1, 2, 'left', 4)", "mouse_click(1, 2, z=3)"]:
        (name, args, kwargs), = theirs(text)
        with pytest.raises(TypeError) as bg:
            getattr(bg_functions, name)(*args, **kwargs)
        with pytest.raises(TypeError) as mine:
            SIGNATURES[name](*args, **kwargs)
        assert str(mine.value) == str(bg.value)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with launch_server(["--max-sessions", "2", "--max-steps", "100"], tmp_path_factory.mktemp("bgym")) as url:
        yield url


def test_coordinate_actions_drive_the_page(server, pages_url):
    with BrowserClient(base_url=server).sync() as client:
        waits: list[float] = []
        env = CoordActions(client, sleep=waits.append)
        env.reset(start_url=f"{pages_url}computer.html")

        def run(action: str) -> dict:
            outcome = env.step(action)
            assert outcome.last_action_error == "", (action, outcome.last_action_error)
            return json.loads(outcome.result.observation.metadata["title"])

        # A typical model answer: prose, a fenced block, several calls.
        seen = run("I will fill the field.\n```\nmouse_click(100.4, 35)\nkeyboard_type('hello world')\n```")
        assert seen["v"] == "hello world"
        seen = run("keyboard_press('ControlOrMeta+a')\nkeyboard_press('Backspace')\nkeyboard_insert_text('typed')")
        assert seen["v"] == "typed" and "key:a+C" in seen["ev"]
        seen = run("keyboard_down('Shift')\nmouse_click(200, 200)\nkeyboard_press('ArrowLeft')\nkeyboard_up('Shift')")
        assert "click:0x1@200,200+S" in seen["ev"] and seen["ev"][-1] == "key:ArrowLeft+S"
        seen = run("mouse_click(210, 210, 'right')\nmouse_dblclick(220, 220)")
        assert {"contextmenu:2x0@210,210+", "dblclick:0x2@220,220+"} <= set(seen["ev"])
        seen = run("mouse_drag_and_drop(100, 150, 300, 250)")
        assert {"down:0@100,150+", "up:0@300,250+"} <= set(seen["ev"])
        seen = run("mouse_move(450, 35)")
        assert seen["hov"] is True
        seen = run("mouse_down(300, 200)\nmouse_move(320, 220)\nmouse_up(330, 230, button='left')")
        assert "up:0@330,230+" in seen["ev"][seen["ev"].index("down:0@300,200+"):], json.dumps(seen)
        seen = run("scroll_at(600, 150, 0, 250)")
        assert seen["bx"] == 250
        outcome = env.step("noop(250)")
        assert outcome.last_action_error == "" and waits == [0.25] and outcome.picture.width == 800
        for action in (f"goto('{pages_url}blank.html')", "go_back()", "go_forward()"):
            assert env.step(action).last_action_error == "", action
            if action == "go_back()":
                assert env.computer.url.endswith("computer.html")
        assert env.computer.url.endswith("blank.html")
        finished = env.step("send_msg_to_user('The code word is PELICAN.')")
        assert finished.last_action_error == "" and finished.done
        assert finished.messages == [{"role": "assistant", "message": "The code word is PELICAN."}]


def test_errors_read_as_browsergyms_last_action_error(server, pages_url):
    with BrowserClient(base_url=server).sync() as client:
        env = CoordActions(client, sleep=lambda s: None)
        env.reset(start_url=f"{pages_url}computer.html")
        for action, error in [
            ("", "ValueError: Received an empty action."),
            ("I am not sure what to do.", "ValueError: Received an empty action."),
            ("click('a51')", "NameError: Invalid action type 'click'."),
            ("mouse_click(10)", "TypeError: mouse_click() missing 1 required positional argument: 'y'"),
            ("keyboard_press('Hyperx')", 'Error: Keyboard.press: Unknown key: "Hyperx"'),
            ("mouse_click(10, 20, 'wheel')", "ValueError: mouse_click: button should be 'left', 'middle' or 'right'"),
            ("mouse_click(887.2, 68)", "Error: mouse_click: x, y (887, 68) is outside the 800x600 screen"),
            ("goto('file:///etc/passwd')", "Error: goto: url: expected an HTTP(S) URL"),
            ("mouse_upload_file(10, 10, 'receipt.pdf')", "NotImplementedError: mouse_upload_file: this environment has no files"),
            ("send_msg_to_user(5)", "ValueError: Forbidden value: 5 is not a string"),
        ]:
            outcome = env.step(action)
            assert outcome.last_action_error.startswith(error), (action, outcome.last_action_error)
            assert not outcome.done
        # The first failing call stops the rest, as BrowserGym's exec does.
        outcome = env.step("mouse_click(100, 35)\nkeyboard_press('Nope')\nkeyboard_type('never')")
        assert outcome.last_action_error.startswith("Error: Keyboard.press: Unknown key")
        assert json.loads(outcome.result.observation.metadata["title"])["v"] == ""
        single = CoordActions(client, multiaction=False)
        assert single.step("noop()\nnoop()").last_action_error == (
            "ValueError: Received a multi-action, only single-actions are allowed."
        )
        reported = env.step("report_infeasible('There is no such button.')")
        assert reported.done and reported.messages[0]["role"] == "infeasible"
