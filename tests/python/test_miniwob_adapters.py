"""The adapters on MiniWoB++'s zoomed pages (the server started with `--miniwob DIR`, as in
test_miniwob.py): an agent prompted with BrowserGym's coordinate actions solves tasks through
`browserenv.browsergym` to the page's reward 1.0, and `capture` draws a region of a zoomed page
through the same picture-to-page mapping the actions use.
"""

from __future__ import annotations

import base64
import io
import re

import pytest
from PIL import Image, ImageChops, ImageStat

from browserenv import BrowserClient
from browserenv.browsergym import CoordActions
from conftest import launch_server
from miniwob_solvers import parse_runs, quoted
from test_miniwob import miniwob_html


@pytest.fixture(scope="module")
def miniwob_url(tmp_path_factory):
    with launch_server(
        ["--miniwob", str(miniwob_html()), "--max-sessions", "4"],
        tmp_path_factory.mktemp("miniwob-adapters"),
    ) as url:
        yield url


def image(png: str) -> Image.Image:
    return Image.open(io.BytesIO(base64.b64decode(png))).convert("RGB")


def find(env, text: str, marker: str, exact: bool = True):
    """The first run of the task's area (under the instruction's band) with that text."""
    for run in parse_runs(env.read_page().text):
        if run.y >= 125 and run.marker == marker and (run.text == text if exact else text in run.text):
            return run
    raise LookupError(f"{text!r} ({marker}) is not on the page")


def centre(run) -> str:
    x, y = run.x + run.width // 2, run.y + run.height // 2
    return f"{x}, {y}"


def run_actions(agent: CoordActions, *actions: str):
    outcome = None
    for action in actions:
        outcome = agent.step(action)
        assert outcome.last_action_error == "", (action, outcome.last_action_error)
    return outcome


@pytest.mark.parametrize("seed", [0, 1])
def test_browsergym_actions_solve_miniwob_tasks_to_reward_1(miniwob_url, seed):
    with BrowserClient(base_url=miniwob_url).sync() as env:
        agent = CoordActions(env)

        agent.reset(task_id="miniwob.click-test", seed=seed)
        button = find(env, "Click", "button", exact=False)
        done = run_actions(agent, f"mouse_click({centre(button)})")
        assert done.done and done.reward == 1.0, done.result.observation.metadata

        started = agent.reset(task_id="miniwob.enter-text", seed=seed)
        word = quoted(started.observation.metadata["task"]["instruction"])
        submit = find(env, "Submit", "button")
        # Several calls in one action, as BrowserGym's multiaction allows (the empty field has
        # no text to find it by: Tab focuses it).
        done = run_actions(
            agent,
            f'keyboard_press("Tab")\nkeyboard_type({word!r})',
            f"mouse_click({centre(submit)})",
        )
        assert done.done and done.reward == 1.0, (word, done.result.observation.metadata)

        started = agent.reset(task_id="miniwob.choose-list", seed=seed)
        option = re.match(r"Select (.*) from the list", started.observation.metadata["task"]["instruction"]).group(1)
        run_actions(agent, 'keyboard_press("Tab")')
        for _ in range(16):
            if find(env, "", "field", exact=False).text == option:
                break
            run_actions(agent, 'keyboard_press("ArrowDown")')
        assert find(env, "", "field", exact=False).text == option
        done = run_actions(agent, f"mouse_click({centre(find(env, 'Submit', 'button'))})")
        assert done.done and done.reward == 1.0, (option, done.result.observation.metadata)


def test_a_capture_of_a_zoomed_page_maps_its_region_like_an_action(miniwob_url):
    """MiniWoB++ pages are drawn 2.5 times larger: a capture's region is in picture pixels like an
    action's point, so the whole viewport at scale 1 is the screenshot, and a region drawn at
    scale 2 is that part of the screenshot at twice the pixels (sharper, never another part)."""
    with BrowserClient(base_url=miniwob_url).sync() as env:
        shown = image(env.reset(task_id="miniwob.click-test", seed=4).observation.screenshot)
        whole = env.capture()
        assert (whole.width, whole.height) == (800, 600)
        assert ImageChops.difference(image(whole.png), shown).getbbox() is None
        button = find(env, "Click", "button", exact=False)
        region = [button.x - 10, button.y - 10, button.x + button.width + 10, button.y + button.height + 10]
        sharp = env.capture(region=region, scale=2)
        width, height = region[2] - region[0], region[3] - region[1]
        assert (sharp.width, sharp.height) == (2 * width, 2 * height)
        smaller = image(sharp.png).resize((width, height), Image.Resampling.BOX)
        part = shown.crop(region)
        # The same part of the page: the region's picture, brought back to its size, differs from
        # the screenshot's pixels there only by the sharper drawing's edges.
        mean = ImageStat.Stat(ImageChops.difference(smaller, part).convert("L")).mean[0]
        assert mean < 12, mean
        # A region one button-width over is another picture (the check above can fail).
        moved = [region[0] + width, region[1], region[2] + width, region[3]]
        if moved[2] <= 800:
            other = shown.crop(moved)
            assert ImageStat.Stat(ImageChops.difference(smaller, other).convert("L")).mean[0] > mean
