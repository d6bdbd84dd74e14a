"""MiniWoB++ offline, scored by the page (docs/tasks.md, "MiniWoB++"), on real Chromium through
the typed client: the server started with `--miniwob DIR`, DIR the `html` folder of the `miniwob`
package installed from PyPI (tests/python/requirements.txt).

- The scripted solvers of `miniwob_solvers.py` (the text layer and the instruction read, actions
  in picture pixels) reach reward 1.0 on five seeds each.
- A random-action run over all 125 tasks ends every episode, with a reward in -1..1 and no error.
- The same seed and the same actions give byte-identical screenshots on a fresh session, a task
  that reads the clock included.
- The Task API lists BrowserGym's train and test splits.
"""

from __future__ import annotations

import concurrent.futures
import json
import random
import re
import urllib.request
from pathlib import Path

import pytest

from browserenv import BrowserAction, BrowserClient
from conftest import launch_server, png_size
from miniwob_solvers import SOLVERS, WAITING, Page

SEEDS = range(5)


def miniwob_html() -> Path:
    """The `html` folder of the installed `miniwob` package (a failure, not a skip, without it)."""
    try:
        import miniwob
    except ImportError:
        pytest.fail("the miniwob package is missing: pip install -r tests/python/requirements.txt")
    folder = Path(miniwob.__file__).parent / "html"
    assert (folder / "miniwob" / "click-test.html").is_file(), folder
    return folder


@pytest.fixture(scope="module")
def miniwob_url(tmp_path_factory):
    with launch_server(
        ["--miniwob", str(miniwob_html()), "--max-sessions", "8"],
        tmp_path_factory.mktemp("miniwob"),
    ) as url:
        yield url


@pytest.fixture(scope="module")
def short_miniwob_url(tmp_path_factory):
    """A server whose episodes end after 4 steps (BROWSER_MAX_STEPS), for the random run."""
    with launch_server(
        ["--miniwob", str(miniwob_html()), "--max-sessions", "8", "--max-steps", "4"],
        tmp_path_factory.mktemp("miniwob-short"),
    ) as url:
        yield url


def solve(url: str, task_id: str, seed: int) -> Page:
    with BrowserClient(base_url=url).sync() as env:
        page = Page(env, task_id, seed)
        SOLVERS[task_id](page)
        return page


@pytest.mark.parametrize("task_id", sorted(SOLVERS))
def test_a_scripted_solver_reaches_reward_1_on_five_seeds(miniwob_url, task_id):
    assert task_id not in WAITING
    with concurrent.futures.ThreadPoolExecutor(len(SEEDS)) as pool:
        pages = list(pool.map(lambda seed: solve(miniwob_url, task_id, seed), SEEDS))
    for seed, page in zip(SEEDS, pages):
        said = page.result.observation.metadata.get("miniwob")
        assert page.done and page.reward == 1.0, (seed, page.instruction, page.reward, said)
        assert said["raw_reward"] == 1.0 and 0 < said["reward"] <= 1.0, said
        assert page.result.observation.error == ""


def test_a_drag_lands_where_the_picture_shows_on_the_zoomed_page(miniwob_url):
    """MiniWoB++ pages are drawn 2.5 times larger: a drag's points are the picture's, so the box
    grabbed moves by the path's travel in the picture, not 2.5 times that."""
    with BrowserClient(base_url=miniwob_url).sync() as env:
        for seed, (dx, dy) in [(1, (60, 40)), (2, (-20, 50))]:
            page = Page(env, "miniwob.drag-box", seed)
            small = page.find("s", below=125)
            page.drag(small.centre, (small.centre[0] + dx, small.centre[1] + dy))
            assert page.result.observation.error == "", page.result.observation.error
            moved = page.find("s", below=125)
            # The letter's box is rounded outward to picture pixels: within 2 of the travel.
            assert abs(moved.x - small.x - dx) <= 2 and abs(moved.y - small.y - dy) <= 2, (small, moved)
            # A hover then a press and release where the box now is: it goes where the pointer is.
            page.act(op="move", x=moved.centre[0], y=moved.centre[1])
            page.act(op="mouse_down", x=moved.centre[0], y=moved.centre[1])
            page.act(op="move", x=moved.centre[0] + 10, y=moved.centre[1] + 20)
            page.act(op="mouse_up", x=moved.centre[0] + 30, y=moved.centre[1] + 30)
            again = page.find("s", below=125)
            assert abs(again.x - moved.x - 30) <= 2 and abs(again.y - moved.y - 30) <= 2, (moved, again)


def test_a_dropdown_on_the_zoomed_page_is_drawn_and_chosen_in_picture_pixels(miniwob_url):
    """choose-list's <select>: `select` finds it at the picture's point (its error names the
    labels), a click opens the popup drawn under it, and a click on a row, where the picture
    shows it, chooses that row's option."""
    from miniwob_solvers import picture

    with BrowserClient(base_url=miniwob_url).sync() as env:
        page = Page(env, "miniwob.choose-list", 3)
        field = page.find("", "field", exact=False, below=125)
        page.act(op="select", x=field.centre[0], y=field.centre[1], text="no such option")
        detail = page.result.observation.metadata["error_detail"]
        assert page.result.observation.error == "action_failed", detail
        labels = re.findall(r'"([^"]*)"', detail.split("its options: ", 1)[1])
        assert field.text in labels, (field.text, labels)
        # Opened: the current option's row is highlighted in blue under the select.
        page.click(field)
        image = picture(page).convert("RGB")
        blue = [
            y for y in range(field.y + field.height, 600)
            if (lambda r, g, b: b > 150 and r < 80)(*image.getpixel((field.x + 5, y)))
        ]
        assert blue, "no highlighted row drawn under the select"
        top, height = blue[0], len(blue)
        assert blue[-1] - top + 1 == height, "one highlighted row"
        current = labels.index(field.text)
        step = 1 if current + 1 < len(labels) else -1
        page.click((field.centre[0], top + height // 2 + step * height))
        assert page.result.observation.error == "", page.result.observation.metadata
        chosen = page.find("", "field", exact=False, below=125)
        assert chosen.text == labels[current + step], (chosen.text, labels, current, step)
        # And `select` by a label, at the picture's point.
        wanted = labels[0] if chosen.text != labels[0] else labels[-1]
        page.act(op="select", x=field.centre[0], y=field.centre[1], text=wanted)
        assert page.result.observation.error == "", page.result.observation.metadata
        assert page.find("", "field", exact=False, below=125).text == wanted


def test_solvers_and_waiting_tasks_are_among_browsergym_s_125(miniwob_url):
    ids = {task["task_id"] for split in ("train", "test") for task in task_api(miniwob_url, split)}
    assert len(ids) == 125
    assert set(SOLVERS) <= ids and set(WAITING) <= ids
    assert not set(SOLVERS) & set(WAITING)
    assert len(SOLVERS) >= 20


# The Task API, without a session.

def task_api(url: str, split: str) -> list[dict]:
    request = urllib.request.Request(
        f"{url}/browserenv/tasks",
        data=json.dumps({"split": split}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(request, timeout=10) as reply:
        return json.load(reply)["tasks"]


def test_the_task_api_lists_browsergym_s_train_and_test_splits(miniwob_url):
    with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(
        f"{miniwob_url}/browserenv/splits", timeout=10
    ) as reply:
        splits = json.load(reply)
    assert splits == [
        {"name": "train", "type": "train", "num_tasks": 62},
        {"name": "test", "type": "test", "num_tasks": 63},
    ]
    train, test = task_api(miniwob_url, "train"), task_api(miniwob_url, "test")
    assert "miniwob.click-test" in {t["task_id"] for t in test}
    assert "miniwob.book-flight" in {t["task_id"] for t in train}
    task = train[0]
    assert task["reset"] == {"task_id": task["task_id"]}
    assert task["checks"] == [] and task["start_url"].endswith(".html")


# Reset, the verdict, the step limit.


def test_a_reset_starts_the_seeded_task_without_its_cover(miniwob_url):
    with BrowserClient(base_url=miniwob_url).sync() as env:
        first = env.reset(task_id="miniwob.enter-text", seed=7)
        text = env.read_page().text
        again = env.reset(task_id="miniwob.enter-text", seed=7)
        other = env.reset(task_id="miniwob.enter-text", seed=8)
        drawn = env.reset(task_id="miniwob.enter-text")
    task = first.observation.metadata["task"]
    assert task["id"] == "miniwob.enter-text" and task["seed"] == 7 and task["split"] == "train"
    assert task["instruction"].startswith('Enter "'), task
    assert first.reward == 0.0 and not first.done and first.observation.error == ""
    assert "START" not in text and "Last reward" not in text and "Time left" not in text
    # The seed decides the problem: the same one twice, another with another seed.
    assert again.observation.metadata["task"]["instruction"] == task["instruction"]
    assert again.observation.screenshot == first.observation.screenshot
    assert other.observation.metadata["task"]["instruction"] != task["instruction"]
    # No seed: one is drawn, and said.
    assert isinstance(drawn.observation.metadata["task"]["seed"], int)
    assert png_size(first.observation.screenshot) == (800, 600)


def test_the_page_s_verdict_ends_the_episode_with_its_raw_reward(miniwob_url):
    with BrowserClient(base_url=miniwob_url).sync() as env:
        page = Page(env, "miniwob.click-test-2", 3)
        named = "ONE" if "ONE" in page.instruction else "TWO"
        wrong = page.find("TWO" if named == "ONE" else "ONE", "button")
        page.click(wrong)
    said = page.result.observation.metadata["miniwob"]
    assert page.done and page.reward == -1.0
    assert said["done"] and said["raw_reward"] == -1.0 and said["reward"] <= 0
    assert page.result.observation.metadata["task"]["id"] == "miniwob.click-test-2"


def test_unknown_tasks_and_other_start_urls_are_refused(miniwob_url):
    with BrowserClient(base_url=miniwob_url).sync() as env:
        with pytest.raises(Exception, match="miniwob.no-such-task"):
            env.reset(task_id="miniwob.no-such-task")
        with pytest.raises(Exception, match="starts at its own start URL"):
            env.reset(task_id="miniwob.click-test", start_url="https://example.com/")
        with pytest.raises(Exception, match="seed must be a whole number"):
            env.reset(task_id="miniwob.click-test", seed=-3)
        # The session goes on.
        assert env.reset(task_id="miniwob.click-test", seed=1).observation.error == ""


def random_episode(url: str, task_id: str, seed: int) -> list:
    rng = random.Random(seed)
    steps = []
    with BrowserClient(base_url=url).sync() as env:
        result = env.reset(task_id=task_id, seed=seed)
        assert result.observation.error == "", (task_id, result.observation.error)
        while not result.done:
            kind = rng.choice(["click", "click", "click", "type", "key", "scroll"])
            if kind == "click":
                action = BrowserAction(op="click", x=rng.randrange(400), y=rng.randrange(125, 525))
            elif kind == "type":
                action = BrowserAction(op="type", text=rng.choice(["a", "hello", "42", "Submit"]))
            elif kind == "key":
                action = BrowserAction(op="key", text=rng.choice(["TAB", "ENTER", "DOWN", "ESCAPE", "BACKSPACE"]))
            else:
                action = BrowserAction(op="scroll", dy=rng.choice([-200, 200]))
            result = env.step(action)
            steps.append((action.op, result.reward, result.done, result.observation.error))
    return steps


def test_random_actions_end_every_episode_of_all_125_tasks(short_miniwob_url):
    ids = sorted(t["task_id"] for split in ("train", "test") for t in task_api(short_miniwob_url, split))
    assert len(ids) == 125
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        runs = dict(zip(ids, pool.map(lambda task: random_episode(short_miniwob_url, task, 11), ids)))
    for task_id, steps in runs.items():
        assert 1 <= len(steps) <= 4, (task_id, steps)
        *_, (_, reward, done, error) = steps
        assert done, (task_id, steps)
        for _, reward, _, error in steps:
            assert -1.0 <= reward <= 1.0 and error == "", (task_id, steps)


# Determinism: the same seed and actions, a fresh session, the same bytes.

# ascending-numbers reads the clock (its reward is discounted by the time taken, on the page's
# clock); the others animate, suggest, page through results. Not `terminal`: its cursor blinks on
# a timer, which fires with the machine's time (BrowserGym marks it nondeterministic too); the
# date it prints, from the page's clock, is checked below.
REPEATED = ["miniwob.ascending-numbers", "miniwob.click-collapsible-nodelay",
            "miniwob.use-autocomplete-nodelay", "miniwob.navigate-tree", "miniwob.enter-text",
            "miniwob.search-engine"]


@pytest.mark.parametrize("task_id", REPEATED)
def test_the_same_seed_and_actions_give_the_same_screenshots_on_a_fresh_session(miniwob_url, task_id):
    played = solve(miniwob_url, task_id, 4)
    assert played.reward == 1.0
    with BrowserClient(base_url=miniwob_url).sync() as env:
        result = env.reset(task_id=task_id, seed=4)
        shots = [result.observation.screenshot]
        for action in played.actions:
            result = env.step(action)
            shots.append(result.observation.screenshot)
    assert result.reward == 1.0
    # The time-discounted reward too, up to where a timer of the page fired between two of the
    # input's events on one run and after them on the other (the page's clock jumps to a timer's
    # due time when it fires): a few milliseconds of the episode's 10 s (0.9998 against 1.0 seen
    # on a loaded machine), never a verdict or a raw reward of its own.
    ours, theirs = result.observation.metadata["miniwob"], played.result.observation.metadata["miniwob"]
    assert {**ours, "reward": None} == {**theirs, "reward": None}
    assert abs(ours["reward"] - theirs["reward"]) <= 0.005, (ours, theirs)
    assert len(shots) == len(played.screenshots)
    for index, (first, second) in enumerate(zip(played.screenshots, shots)):
        assert first == second, f"{task_id}: screenshot {index} differs"


def test_a_page_that_prints_the_clock_prints_the_same_time_in_every_session(miniwob_url):
    def login_line() -> str:
        with BrowserClient(base_url=miniwob_url).sync() as env:
            env.reset(task_id="miniwob.terminal", seed=2)
            return next(line for line in env.read_page().text.splitlines() if "Last login" in line)

    first, second = login_line(), login_line()
    assert first == second and "2026" in first, (first, second)
