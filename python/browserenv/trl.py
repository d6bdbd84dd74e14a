"""An ``environment_factory`` class for TRL's ``GRPOTrainer``: one browser episode per rollout.

    from browserenv.trl import BrowserEnv
    trainer = GRPOTrainer(model=..., train_dataset=rows, environment_factory=BrowserEnv)

TRL makes an instance with no arguments, calls ``reset(**row)`` with the dataset row's columns at
the start of each rollout, offers the model every public method but ``reset`` and ``get_reward``
as a tool (described by its type hints and Google-style docstring), and scores the rollout with
``get_reward()``. A ``None`` reward marks a rollout the environment spoiled (the browser or the
server failed, not the model): TRL leaves it out of the group's baseline and gives it no advantage.

Configuration, read when an instance is made (TRL passes no arguments):

- ``BROWSERENV_URL``: the server (default ``http://127.0.0.1:8000``).
- ``BROWSER_API_TOKEN``: the server's token, if it has one.
- ``BROWSERENV_SCREENSHOTS``: ``1`` to hand the model each screenshot as an image too (for vision
  models; needs Pillow). ``VisionBrowserEnv`` is ``BrowserEnv`` with this on.

A row names its episode with ``task_id`` (a task of the server's ``--tasks`` file: it starts at
the task's page and ``finish`` is scored 1.0 or 0.0) or ``start_url`` (any page; reward 0). The
page's text comes from the observation's ``metadata.text`` when the server runs with
``BROWSER_OBSERVE_TEXT=1``, else from the server's ``read_page`` tool on the same session.
"""

from __future__ import annotations

import base64
import io
import logging
import os
from typing import Any, Callable, Optional, TypeVar

from pydantic import ValidationError

from .client import DEFAULT_MAX_CHARS, BrowserClient
from .models import (
    MAX_PATH_POINTS,
    MAX_REPEAT,
    MAX_SCROLL,
    MAX_TEXT_CHARS,
    MIN_PATH_POINTS,
    SCREEN_HEIGHT,
    SCREEN_WIDTH,
    SUPPORTED_KEYS,
    BrowserAction,
    KeyName,
)

logger = logging.getLogger(__name__)

URL_VARIABLE = "BROWSERENV_URL"
TOKEN_VARIABLE = "BROWSER_API_TOKEN"
SCREENSHOTS_VARIABLE = "BROWSERENV_SCREENSHOTS"
DEFAULT_URL = "http://127.0.0.1:8000"

#: Observation errors that end an episode through no fault of the agent (docs/server.md).
ENVIRONMENT_ERRORS = frozenset(
    {"renderer_timeout", "renderer_crashed", "browser_disconnected", "blocked_by_bot_verification"}
)
#: ... and at reset, the start page that did not load: the episode never really began.
RESET_ERRORS = ENVIRONMENT_ERRORS | {"page_load_timeout", "navigation_failed"}
#: The starts of the server's refusals that mean the row itself is wrong (no retry can help).
_ROW_ERRORS = ("unknown task_id", "expected an HTTP(S) URL", "reset needs start_url", "start_url")
#: ... and of the refusals of one action the model asked for (a URL the reset's rule refuses):
#: the model's to read, the episode goes on.
_ACTION_ERRORS = ("url: ", "url is this server's own address", "is not an action of this server")

_LIMITS = {
    "width": SCREEN_WIDTH,
    "height": SCREEN_HEIGHT,
    "max_x": SCREEN_WIDTH - 1,
    "max_y": SCREEN_HEIGHT - 1,
    "max_scroll": MAX_SCROLL,
    "max_text": MAX_TEXT_CHARS,
    "keys": ", ".join(SUPPORTED_KEYS),
    "min_path": MIN_PATH_POINTS,
    "max_path": MAX_PATH_POINTS,
    "max_repeat": MAX_REPEAT,
}

F = TypeVar("F", bound=Callable[..., Any])


def _with_limits(method: F) -> F:
    """Fill the docstring's ``{max_x}``-style fields from the models' constants, so the tool
    descriptions the model reads state the limits the server enforces."""
    method.__doc__ = (method.__doc__ or "").format(**_LIMITS)
    return method


def _on(value: Optional[str]) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def _short(error: BaseException) -> str:
    if isinstance(error, ValidationError):
        return "; ".join(
            f"{'.'.join(str(part) for part in e['loc']) or 'action'}: {e['msg']}" for e in error.errors()
        )
    text = str(error) or type(error).__name__
    return text if len(text) <= 300 else text[:300] + "..."


class BrowserEnv:
    """A browser episode for one rollout, its actions as tools. See the module's docstring."""

    #: Hand the model each screenshot as an image content part (vision models).
    screenshots: bool = False
    #: The most characters of page text one tool result carries (whole lines; ~4 per token).
    text_chars: int = DEFAULT_MAX_CHARS

    def __init__(self) -> None:
        self.url = os.environ.get(URL_VARIABLE) or DEFAULT_URL
        self._token = os.environ.get(TOKEN_VARIABLE) or None
        if os.environ.get(SCREENSHOTS_VARIABLE) is not None:
            self.screenshots = _on(os.environ.get(SCREENSHOTS_VARIABLE))
        self._client: Any = None
        self._clear()

    # TRL's two reserved methods.

    def reset(self, **row: Any) -> str | list:
        """Start the row's episode: its ``task_id`` (a task of the server's task set) or its
        ``start_url``. Returns the task's instruction and the first page, as the model reads it."""
        task_id = row.get("task_id") or None
        start_url = row.get("start_url") or None
        if not task_id and not start_url:
            raise ValueError("a row needs a task_id (a task of the server's --tasks file) or a start_url")
        self._clear()
        kwargs = {"task_id": task_id} if task_id else {"start_url": start_url}
        if row.get("episode_id"):
            kwargs["episode_id"] = str(row["episode_id"])
        self.task_id = task_id
        result, last_error = None, None
        # A second try on a fresh connection: the server ends a session idle for
        # BROWSER_SESSION_TIMEOUT_SECONDS, which a long training step can be.
        for _ in range(2):
            try:
                result = self._connect().reset(**kwargs)
                break
            except Exception as error:  # noqa: BLE001 - sorted out below
                self._disconnect()
                if "EXECUTION_ERROR" in str(error) and any(s in str(error) for s in _ROW_ERRORS):
                    raise ValueError(f"the server refused the row's reset: {_short(error)}") from None
                last_error = error
        if result is None:
            self._fail(f"reset failed: {_short(last_error)}")
            return self._format(None)
        metadata = result.observation.metadata or {}
        task = metadata.get("task") or {}
        self.instruction = task.get("instruction") or str(row.get("instruction") or "")
        self.max_steps = task.get("max_steps")
        error = result.observation.error
        if error in RESET_ERRORS or result.done:
            detail = metadata.get("error_detail")
            self._fail(f"the start page failed: {error or 'episode ended at reset'}" + (f" ({detail})" if detail else ""))
        intro = f"Task: {self.instruction}" if self.instruction else None
        return self._observe(result, intro=intro)

    def get_reward(self) -> Optional[float]:
        """The episode's reward: what the server gave at ``finish`` (1.0 or 0.0 for a task), 0.0
        for an episode not finished (no ``finish``, or out of steps), and ``None`` when the
        environment failed (the reason is in ``failure``), so that TRL leaves the rollout out."""
        if self.failure is not None:
            logger.warning("browserenv: no reward for task %s: %s", self.task_id or "-", self.failure)
            return None
        return self.reward if self.reward is not None else 0.0

    # The tools.

    @_with_limits
    def click(self, x: int, y: int) -> str | list:
        """Click at a point of the page, in pixels of the {width}x{height} screenshot. Click a field before typing into it; the centre of a box of the page text (x + w/2, y + h/2) is a point on it.

        Args:
            x: Pixel column, from 0 (left edge) to {max_x} (right edge).
            y: Pixel row, from 0 (top edge) to {max_y} (bottom edge).

        Returns:
            The page after the click: its URL, any error, and its visible text.
        """
        return self._act(op="click", x=x, y=y)

    @_with_limits
    def type_text(self, text: str) -> str | list:
        """Type text into the focused field, key by key as a person would (click the field first). A newline presses Enter.

        Args:
            text: The text to type, 1 to {max_text} characters.

        Returns:
            The page after typing: its URL, any error, and its visible text.
        """
        return self._act(op="type", text=text)

    @_with_limits
    def press_key(self, key: KeyName) -> str | list:
        """Press one key: ENTER submits a form, TAB moves to the next field, CTRL+A selects all, ESCAPE closes, arrows move.

        Args:
            key: The key, one of {keys}.

        Returns:
            The page after the key: its URL, any error, and its visible text.
        """
        return self._act(op="key", text=key)

    @_with_limits
    def scroll(self, dy: int) -> str | list:
        """Scroll with the mouse wheel at the point last clicked (the middle of the page before any click); only text on screen is shown, so scroll to read further.

        Args:
            dy: Pixels to scroll, from -{max_scroll} to {max_scroll}: positive scrolls down, negative up.

        Returns:
            The page after scrolling: its URL, any error, and its visible text.
        """
        return self._act(op="scroll", dy=dy)

    @_with_limits
    def double_click(self, x: int, y: int) -> str | list:
        """Double-click at a point of the page (selects a word, opens an item, starts editing a name).

        Args:
            x: Pixel column, from 0 (left edge) to {max_x} (right edge).
            y: Pixel row, from 0 (top edge) to {max_y} (bottom edge).

        Returns:
            The page after the double click: its URL, any error, and its visible text.
        """
        return self._act(op="click", x=x, y=y, count=2)

    @_with_limits
    def right_click(self, x: int, y: int) -> str | list:
        """Click with the right mouse button at a point of the page (opens the page's own context menu, if it has one).

        Args:
            x: Pixel column, from 0 (left edge) to {max_x} (right edge).
            y: Pixel row, from 0 (top edge) to {max_y} (bottom edge).

        Returns:
            The page after the right click: its URL, any error, and its visible text.
        """
        return self._act(op="click", x=x, y=y, button="right")

    @_with_limits
    def hover(self, x: int, y: int) -> str | list:
        """Move the mouse pointer to a point of the page without clicking: opens menus and tooltips that show on hover.

        Args:
            x: Pixel column, from 0 (left edge) to {max_x} (right edge).
            y: Pixel row, from 0 (top edge) to {max_y} (bottom edge).

        Returns:
            The page with the pointer there: its URL, any error, and its visible text.
        """
        return self._act(op="move", x=x, y=y)

    @_with_limits
    def drag(self, path: list[list[int]]) -> str | list:
        """Drag with the mouse: press at the first point, move through the others, release at the last. Moves sliders, reorders lists, drops cards into columns, selects text.

        Args:
            path: {min_path} to {max_path} points [x, y] in pixels of the screenshot (x 0..{max_x}, y 0..{max_y}).

        Returns:
            The page after the drag: its URL, any error, and its visible text.
        """
        return self._act(op="drag", path=path)

    @_with_limits
    def press(self, keys: str, repeat: int = 1) -> str | list:
        """Press a key or a chord of keys, by name: PAGE_DOWN, HOME, END, DELETE, F5, SPACE, a letter or digit, or modifiers joined with + before a key: SHIFT+TAB, CTRL+C (copy), CTRL+V (paste), CTRL+Z.

        Args:
            keys: The key or chord, e.g. SHIFT+TAB.
            repeat: How many times to press it, 1 to {max_repeat}.

        Returns:
            The page after the keys: its URL, any error, and its visible text.
        """
        return self._act(op="press", text=keys, repeat=repeat)

    def select(self, x: int, y: int, label: str) -> str | list:
        """Choose an option of a dropdown (a select box) by its label, as a person would; the dropdown is the one at the point x, y.

        Args:
            x: Pixel column of the dropdown.
            y: Pixel row of the dropdown.
            label: The option's text, as the dropdown shows it.

        Returns:
            The page after the choice: its URL, any error (naming the options when none has that label), and its visible text.
        """
        return self._act(op="select", x=x, y=y, text=label)

    def go_forward(self) -> str | list:
        """Go forward to the next page in the browser's history (after going back).

        Returns:
            The next page: its URL, any error, and its visible text.
        """
        return self._act(op="forward")

    def open_url(self, url: str) -> str | list:
        """Open a web address (http or https) in the current tab, as if typed in the address bar.

        Args:
            url: The address, e.g. https://example.com/.

        Returns:
            The page: its URL, any error, and its visible text.
        """
        return self._act(op="goto", url=url)

    def go_back(self) -> str | list:
        """Go back to the previous page in the browser's history.

        Returns:
            The previous page: its URL, any error, and its visible text.
        """
        return self._act(op="back")

    def wait(self) -> str | list:
        """Wait a moment for the page to change on its own (a load, an animation), then look again.

        Returns:
            The page after the wait: its URL, any error, and its visible text.
        """
        return self._act(op="wait")

    @_with_limits
    def finish(self, answer: str = "") -> str | list:
        """End the episode, with the answer when the task asks for one. Call it once the task is done: the episode is scored now.

        Args:
            answer: The answer the task asks for (at most {max_text} characters), or nothing.

        Returns:
            That the episode is over, and its reward.
        """
        return self._act(op="finish", text=answer)

    def read_page(self) -> str | list:
        """Read the page's visible text again without acting, e.g. after it changed by itself.

        Returns:
            The page: its URL and its visible text, one line per line on screen as x,y,w,h [marker] text.
        """
        self._check_running()
        text = self._page_text(None)
        result = self._last
        return self._format(result, body=text)

    # The rest is private: TRL would offer a public method to the model as a tool.

    def __enter__(self) -> "BrowserEnv":
        return self

    def __exit__(self, *exc: Any) -> None:
        self._disconnect()

    def __del__(self) -> None:
        try:
            self._disconnect()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    def _clear(self) -> None:
        self.task_id: Optional[str] = None
        self.instruction = ""
        self.max_steps: Optional[int] = None
        self.steps = 0
        self.done = False
        self.reward: Optional[float] = None
        #: Why the environment failed this episode (then ``get_reward()`` is ``None``).
        self.failure: Optional[str] = None
        self._last: Any = None

    def _connect(self) -> Any:
        if self._client is None:
            self._client = BrowserClient(base_url=self.url, token=self._token).sync()
            self._client.connect()
        return self._client

    def _disconnect(self) -> None:
        client, self._client = getattr(self, "_client", None), None
        if client is not None:
            try:
                client.close()
            except Exception:  # noqa: BLE001 - a broken connection closes as it can
                pass

    def _fail(self, reason: str) -> None:
        if self.failure is None:
            self.failure = reason
            logger.warning("browserenv: the environment failed (task %s): %s", self.task_id or "-", reason)

    def _failure_text(self) -> str:
        return f"The browser environment failed: {self.failure}. This is not your fault; stop here."

    def _check_running(self) -> None:
        if self.failure is not None:
            raise RuntimeError(self._failure_text())
        if self._client is None or self._last is None:
            raise RuntimeError("no episode is running")
        if self.done:
            raise RuntimeError("the episode is over: do not call more tools")

    def _act(self, **fields: Any) -> str | list:
        self._check_running()
        try:
            action = BrowserAction(**fields)
        except ValidationError as error:
            raise ValueError(_short(error)) from None
        try:
            result = self._client.step(action)
        except Exception as error:  # noqa: BLE001 - the server or the connection failed
            if "EXECUTION_ERROR" in str(error) and any(s in str(error) for s in _ACTION_ERRORS):
                message = str(error).removeprefix("Server error: ").split(" (code: ")[0]
                raise ValueError(message) from None
            self._disconnect()
            self._fail(f"{action.op} failed: {_short(error)}")
            raise RuntimeError(self._failure_text()) from None
        self.steps += 1
        observation = result.observation
        if observation.error in ENVIRONMENT_ERRORS:
            detail = (observation.metadata or {}).get("error_detail")
            self._fail(f"{observation.error}" + (f" ({detail})" if detail else ""))
        if result.done:
            self.done = True
            if self.failure is None:
                self.reward = float(result.reward or 0.0) if action.op == "finish" else 0.0
        return self._observe(result)

    def _observe(self, result: Any, intro: Optional[str] = None) -> str | list:
        self._last = result
        if self.failure is not None or result.done:
            return self._format(result, intro=intro)
        return self._format(result, intro=intro, body=self._page_text(result))

    def _page_text(self, result: Any) -> str:
        metadata = (result.observation.metadata or {}) if result is not None else {}
        if "text" in metadata:
            text, truncated = metadata.get("text") or "", bool(metadata.get("text_truncated"))
            if len(text) > self.text_chars:
                text = text[: self.text_chars].rsplit("\n", 1)[0] + "\n[truncated]"
        else:
            try:
                page = self._client.read_page(self.text_chars)
            except Exception as error:  # noqa: BLE001 - the picture still tells something
                return f"(the page's text could not be read: {_short(error)})"
            text, truncated = page.text, page.truncated
        del truncated  # the text ends in [truncated] when lines were left out
        return text or "[no visible text]"

    def _format(self, result: Any, intro: Optional[str] = None, body: Optional[str] = None) -> str | list:
        lines = [intro, ""] if intro else []
        if result is not None:
            observation = result.observation
            metadata = observation.metadata or {}
            lines.append(f"URL: {observation.url}")
            if metadata.get("title"):
                lines.append(f"Title: {metadata['title']}")
            step = metadata.get("step", self.steps)
            lines.append(f"Step: {step} of {self.max_steps}" if self.max_steps else f"Step: {step}")
            if observation.error:
                detail = metadata.get("error_detail")
                lines.append(f"Error: {observation.error}" + (f" ({detail})" if detail else ""))
        if self.failure is not None:
            lines.append(self._failure_text())
        elif self.done:
            lines.append(f"The episode is over. Reward: {self.reward if self.reward is not None else 0.0}")
        if body is not None:
            lines += ["Page text (x,y,w,h [marker] text; the centre of a box is a point to click):", body]
        text = "\n".join(lines)
        if not self.screenshots:
            return text
        parts: list = []
        screenshot = result.observation.screenshot if result is not None else ""
        if screenshot:
            from PIL import Image

            image = Image.open(io.BytesIO(base64.b64decode(screenshot)))
            image.load()
            parts.append({"type": "image", "image": image})
        parts.append({"type": "text", "text": text})
        return parts


class VisionBrowserEnv(BrowserEnv):
    """``BrowserEnv`` for vision models: every tool result also carries the screenshot as an
    image content part (``{"type": "image", "image": PIL.Image}``), TRL's multimodal tool return."""

    screenshots = True


__all__ = ["BrowserEnv", "VisionBrowserEnv", "ENVIRONMENT_ERRORS", "RESET_ERRORS"]
