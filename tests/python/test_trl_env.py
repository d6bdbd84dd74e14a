"""``browserenv.trl.BrowserEnv`` driven as TRL's ``GRPOTrainer`` drives an ``environment_factory``
(trl 1.16: ``_SupportsReset``, the tool loop of ``grpo_trainer.py``), without a model:

- made with no arguments, configured by ``BROWSERENV_URL`` and ``BROWSER_API_TOKEN``;
- its tools are its public methods but ``reset`` and ``get_reward``, each with a schema that
  transformers' ``get_json_schema`` derives from its type hints and Google-style docstring;
- ``reset(**row)`` with a dataset row, tool calls by name with JSON arguments, ``get_reward()``:
  a scripted policy takes three demo tasks to reward 1.0;
- the reward is 0.0 for a wrong answer or no ``finish``, and ``None`` with a reason when the
  environment failed (a server that cannot be reached, one that dies mid-episode);
- a vision variant hands back the screenshot as TRL's image content part;
- ``examples/trl_grpo.py``, the training script a user with a GPU runs, compiles.
"""

from __future__ import annotations

import inspect
import json
import os
import py_compile
import signal
import time

import pytest
from transformers.utils import get_json_schema

from browserenv import MAX_SCROLL, MAX_TEXT_CHARS, SCREEN_HEIGHT, SCREEN_WIDTH, SUPPORTED_KEYS
from browserenv.trl import BrowserEnv, VisionBrowserEnv
from conftest import REPO_ROOT, SERVER_PIDS, free_port, launch_server

TOKEN = "trl-s3cret"
# `wait` sleeps BROWSER_EXPLICIT_WAIT_SECONDS (3 s by default).
SITE_ARGS = ["--site", "assets/site", "--tasks", "assets/tasks/demo.jsonl", "--explicit-wait", "0.5"]
TOOLS = [
    "click", "double_click", "drag", "finish", "go_back", "go_forward", "hover", "open_url", "press",
    "press_key", "read_page", "right_click", "scroll", "select", "type_text", "wait",
]

# (tool, arguments, words the tool's result must hold); from assets/tasks/demo-solutions.jsonl, with
# read_page, go_back and wait added where they change nothing of the outcome.
SCRIPTS = {
    "info-staff-count": [
        ("click", {"x": 641, "y": 24}, "About Harbor Hardware"),
        ("read_page", {}, "About Harbor Hardware"),
        ("scroll", {"dy": 200}, "23"),
        ("finish", {"answer": "23"}, "Reward: 1.0"),
    ],
    "act-add-two-hammers": [
        ("click", {"x": 114, "y": 584}, "16 oz Claw Hammer"),
        ("click", {"x": 341, "y": 357}, None),
        ("press_key", {"key": "CTRL+A"}, None),
        ("type_text", {"text": "2"}, "[field] 2"),
        ("click", {"x": 452, "y": 357}, "Added 2 × 16 oz Claw Hammer to your cart"),
        ("finish", {"answer": ""}, "Reward: 1.0"),
    ],
    "nav-history-1979": [
        ("click", {"x": 349, "y": 533}, None),
        ("click", {"x": 138, "y": 448}, "article-3.html#s3"),
        ("go_back", {}, "article-3.html"),
        ("wait", {}, None),
        ("click", {"x": 138, "y": 448}, "article-3.html#s3"),
        ("finish", {"answer": ""}, "Reward: 1.0"),
    ],
}


def trl_tools(env) -> dict:
    """The tools TRL offers the model: the public methods but its two reserved ones."""
    return {
        name: member
        for name, member in inspect.getmembers(env, predicate=inspect.ismethod)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    }


def call_tool(tools: dict, name: str, arguments: dict):
    """As TRL's tool loop: the call by name with the parsed JSON arguments; an exception becomes
    `{"error": ...}` for the model; a list is multimodal content, anything else its str()."""
    try:
        result = tools[name](**json.loads(json.dumps(arguments)))
    except Exception as error:  # noqa: BLE001 - what TRL does
        return {"error": str(error)}
    return result if isinstance(result, list) else str(result)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with launch_server(
        [*SITE_ARGS, "--max-sessions", "3", "--token", TOKEN], tmp_path_factory.mktemp("trl")
    ) as url:
        yield url


@pytest.fixture()
def configured(server, monkeypatch):
    monkeypatch.setenv("BROWSERENV_URL", server)
    monkeypatch.setenv("BROWSER_API_TOKEN", TOKEN)
    monkeypatch.delenv("BROWSERENV_SCREENSHOTS", raising=False)
    return server


# --------------------------------------------------------------------------- the tools' schemas


def test_the_tools_are_the_actions_and_read_page():
    env = BrowserEnv()
    assert sorted(trl_tools(env)) == TOOLS
    for name in ("reset", "get_reward"):
        assert callable(getattr(env, name))
    assert inspect.signature(BrowserEnv).parameters == {}, "TRL makes it with no arguments"


def test_get_json_schema_describes_every_tool():
    schemas = {name: get_json_schema(tool)["function"] for name, tool in trl_tools(BrowserEnv()).items()}
    for name, schema in schemas.items():
        assert schema["name"] == name and schema["description"], schema
        assert "{" not in schema["description"], schema
        for argument in schema["parameters"]["properties"].values():
            assert argument["description"] and "{" not in argument["description"], schema
    click = schemas["click"]["parameters"]
    assert click["required"] == ["x", "y"]
    assert click["properties"]["x"]["type"] == "integer"
    assert f"0 (left edge) to {SCREEN_WIDTH - 1}" in click["properties"]["x"]["description"]
    assert f"0 (top edge) to {SCREEN_HEIGHT - 1}" in click["properties"]["y"]["description"]
    assert f"{SCREEN_WIDTH}x{SCREEN_HEIGHT}" in schemas["click"]["description"]
    key = schemas["press_key"]["parameters"]["properties"]["key"]
    assert tuple(key["enum"]) == SUPPORTED_KEYS
    assert f"-{MAX_SCROLL} to {MAX_SCROLL}" in schemas["scroll"]["parameters"]["properties"]["dy"]["description"]
    assert str(MAX_TEXT_CHARS) in schemas["type_text"]["parameters"]["properties"]["text"]["description"]
    finish = schemas["finish"]["parameters"]
    assert finish["properties"]["answer"]["type"] == "string" and "required" not in finish
    for name in ("go_back", "go_forward", "wait", "read_page"):
        assert schemas[name]["parameters"]["properties"] == {}
    path = schemas["drag"]["parameters"]["properties"]["path"]
    assert path["type"] == "array" and path["items"] == {"type": "array", "items": {"type": "integer"}}
    press = schemas["press"]["parameters"]
    assert press["required"] == ["keys"] and "SHIFT+TAB" in press["properties"]["keys"]["description"]
    select = schemas["select"]["parameters"]
    assert select["required"] == ["x", "y", "label"]


# --------------------------------------------------------------------------- episodes


@pytest.mark.parametrize("task_id", list(SCRIPTS))
def test_a_scripted_policy_solves_demo_tasks(configured, task_id):
    env = BrowserEnv()  # as TRL makes it
    tools = trl_tools(env)
    row = {"prompt": [{"role": "user", "content": "Use the browser tools."}], "task_id": task_id}
    first = env.reset(**row)
    assert isinstance(first, str)
    assert first.startswith("Task: ") and "URL: http://127.0.0.1:" in first, first
    assert "Page text (x,y,w,h [marker] text" in first and "[link] Harbor Hardware" in first, first
    transcript = [first]
    for name, arguments, words in SCRIPTS[task_id]:
        result = call_tool(tools, name, arguments)
        assert isinstance(result, str), (name, result)
        if words:
            assert words in result, (name, result)
        transcript.append(result)
    assert env.done is True and env.failure is None
    assert env.get_reward() == 1.0, "\n---\n".join(transcript)
    # After the end, a tool says so (TRL hands the model the error).
    assert call_tool(tools, "click", {"x": 1, "y": 1}) == {"error": "the episode is over: do not call more tools"}
    # The same instance serves the next rollout (TRL pools them).
    again = env.reset(task_id="info-workshop-time")
    assert "Free workshop this Saturday" in again and env.get_reward() == 0.0
    assert env.finish("10:00").endswith("Reward: 1.0") and env.get_reward() == 1.0


def test_a_wrong_answer_and_no_finish_are_zero(configured):
    env = BrowserEnv()
    env.reset(task_id="info-founded")
    assert env.get_reward() == 0.0, "not finished"
    out = env.finish("1970")
    assert "Reward: 0.0" in out and env.get_reward() == 0.0 and env.failure is None


def test_bad_arguments_are_the_models_to_read(configured):
    env = BrowserEnv()
    tools = trl_tools(env)
    env.reset(task_id="info-founded")
    assert call_tool(tools, "click", {"x": SCREEN_WIDTH, "y": 5}) == {"error": "x: Input should be less than 800"}
    assert "key must be one of ENTER" in call_tool(tools, "press_key", {"key": "F5"})["error"]
    assert call_tool(tools, "type_text", {"text": ""}) == {"error": "action: Value error, type needs non-empty text"}
    assert env.failure is None and env.steps == 0
    assert "Reward: 1.0" in call_tool(tools, "finish", {"answer": "1968"})


def test_a_row_without_a_task_or_page_is_refused(configured):
    env = BrowserEnv()
    with pytest.raises(ValueError, match="task_id"):
        env.reset(prompt="no task")
    with pytest.raises(ValueError, match="unknown task_id"):
        env.reset(task_id="no-such-task")


def test_a_start_url_row(configured):
    env = BrowserEnv()
    first = env.reset(task_id="info-founded")
    site = first.split("URL: ", 1)[1].split("\n", 1)[0].rsplit("/", 1)[0]
    page = env.reset(start_url=f"{site}/hours.html", instruction="Read the Sunday hours.")
    assert page.startswith("Task: Read the Sunday hours.") and "Opening hours" in page
    assert env.finish("whatever").endswith("Reward: 0.0") and env.get_reward() == 0.0


def test_the_gesture_tools_do_on_real_pages_what_they_say(configured, pages_url):
    env = BrowserEnv()
    tools = trl_tools(env)
    env.reset(start_url=f"{pages_url}shop.html")
    assert '"sort":"price-desc"' in call_tool(tools, "select", {"x": 180, "y": 68, "label": "Price: high to low"})
    assert '"max":100' in call_tool(tools, "drag", {"path": [[620, 68], [520, 68], [420, 68]]})
    assert "Error: action_failed" in call_tool(tools, "select", {"x": 180, "y": 68, "label": "Cheapest"})
    call_tool(tools, "open_url", {"url": f"{pages_url}menu.html"})
    assert '"mega":true' in call_tool(tools, "hover", {"x": 70, "y": 20})
    assert '"editing":true' in call_tool(tools, "double_click", {"x": 60, "y": 250})
    assert '"ctx":[100,400]' in call_tool(tools, "right_click", {"x": 100, "y": 400})
    back = call_tool(tools, "go_back", {})
    assert "shop.html" in back and "menu.html" in call_tool(tools, "go_forward", {})
    call_tool(tools, "open_url", {"url": f"{pages_url}editor.html"})
    call_tool(tools, "click", {"x": 560, "y": 154})
    assert '"focus":"a"' in call_tool(tools, "press", {"keys": "SHIFT+TAB", "repeat": 2})
    # Bad arguments are the model's to read; the episode goes on.
    assert 'unknown key "FOO"' in call_tool(tools, "press", {"keys": "CTRL+FOO"})["error"]
    assert "Input should be less than 800" in call_tool(tools, "drag", {"path": [[0, 0], [900, 0]]})["error"]
    assert "url: expected an HTTP(S) URL" in call_tool(tools, "open_url", {"url": "file:///etc/passwd"})["error"]
    assert "Reward: 0.0" in call_tool(tools, "finish", {})


def test_vision_models_get_the_screenshot_as_an_image_part(configured):
    env = VisionBrowserEnv()
    first = env.reset(task_id="info-workshop-time")
    assert [part["type"] for part in first] == ["image", "text"]
    assert first[0]["image"].size == (SCREEN_WIDTH, SCREEN_HEIGHT)
    assert "Free workshop this Saturday" in first[1]["text"]
    again = env.read_page()
    assert [part["type"] for part in again] == ["image", "text"]
    last = env.finish("10:00")
    assert last[-1]["text"].endswith("Reward: 1.0") and env.get_reward() == 1.0


def test_the_screenshot_switch(configured, monkeypatch):
    monkeypatch.setenv("BROWSERENV_SCREENSHOTS", "1")
    assert BrowserEnv().screenshots is True
    monkeypatch.setenv("BROWSERENV_SCREENSHOTS", "0")
    assert VisionBrowserEnv().screenshots is False


# --------------------------------------------------------------------------- the environment's failures


def test_an_unreachable_server_is_no_reward_not_a_wrong_answer(monkeypatch):
    monkeypatch.setenv("BROWSERENV_URL", f"http://127.0.0.1:{free_port()}")
    env = BrowserEnv()
    tools = trl_tools(env)
    text = env.reset(task_id="info-founded")
    assert "The browser environment failed: reset failed" in text and "not your fault" in text
    assert env.failure.startswith("reset failed: Failed to connect"), env.failure
    assert env.get_reward() is None
    assert "The browser environment failed" in call_tool(tools, "click", {"x": 1, "y": 1})["error"]


def test_a_server_that_dies_mid_episode_is_no_reward(tmp_path, monkeypatch):
    with launch_server([*SITE_ARGS, "--max-sessions", "1"], tmp_path) as url:
        monkeypatch.setenv("BROWSERENV_URL", url)
        monkeypatch.delenv("BROWSER_API_TOKEN", raising=False)
        env = BrowserEnv()
        env.reset(task_id="info-founded")
        os.kill(SERVER_PIDS[url], signal.SIGKILL)
        result = call_tool(trl_tools(env), "click", {"x": 641, "y": 24})
        assert "The browser environment failed: click failed" in result["error"], result
        assert env.get_reward() is None and env.failure.startswith("click failed"), env.failure


def test_reset_reconnects_after_the_server_ended_an_idle_session(tmp_path, monkeypatch):
    """A training step can outlast BROWSER_SESSION_TIMEOUT_SECONDS between two rollouts."""
    with launch_server([*SITE_ARGS, "--max-sessions", "1", "--session-timeout", "1"], tmp_path) as url:
        monkeypatch.setenv("BROWSERENV_URL", url)
        monkeypatch.delenv("BROWSER_API_TOKEN", raising=False)
        env = BrowserEnv()
        env.reset(task_id="info-founded")
        time.sleep(2.5)
        again = env.reset(task_id="info-workshop-time")
        assert env.failure is None, env.failure
        assert "Free workshop this Saturday" in again
        assert env.finish("10:00").endswith("Reward: 1.0")


def test_with_observe_text_the_text_comes_with_the_observation(tmp_path, monkeypatch):
    with launch_server([*SITE_ARGS, "--max-sessions", "1", "--observe-text"], tmp_path) as url:
        monkeypatch.setenv("BROWSERENV_URL", url)
        monkeypatch.delenv("BROWSER_API_TOKEN", raising=False)
        env = BrowserEnv()
        env.reset(task_id="info-founded")

        def no_read(*args, **kwargs):
            raise AssertionError("read_page called although the observation has the text")

        env._client.read_page = no_read
        about = env.click(641, 24)
        assert "About Harbor Hardware" in about
        assert env.finish("1968").endswith("Reward: 1.0")


def test_the_training_example_compiles(tmp_path):
    py_compile.compile(
        str(REPO_ROOT / "examples" / "trl_grpo.py"), cfile=str(tmp_path / "trl_grpo.pyc"), doraise=True
    )
