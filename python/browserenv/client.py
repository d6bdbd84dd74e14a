"""The typed OpenEnv client of the browser environment.

``BrowserClient`` is the seed's client (``_step_payload``, ``_parse_result``, ``_parse_state``) on
OpenEnv's ``EnvClient``, which gives it both ways of use:

    async with BrowserClient(base_url="http://127.0.0.1:8000") as browser:      # async
        result = await browser.reset(start_url="https://example.com")

    with BrowserClient(base_url="http://127.0.0.1:8000").sync() as browser:     # sync
        result = browser.reset(start_url="https://example.com")

Additions: ``token`` (a server started with ``BROWSER_API_TOKEN`` wants ``Authorization: Bearer
TOKEN``), ``read_page()`` (the page's visible text, over the session's own socket), ``capture()``
(a fresh picture of the page or a sharper one of a region of it, without acting),
``request_human()`` (ask the people watching the session for help, and get what they did and
said) and a ``from_docker_image`` that starts the image with a token of its own.
"""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import time
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Optional

from openenv.core import EnvClient
from openenv.core.client_types import StepResult
from openenv.core.env_client import _BootstrapResult
from openenv.core.containers.runtime import LocalDockerProvider

from .models import BrowserAction, BrowserObservation, BrowserState

#: The image ``make image`` builds.
DEFAULT_IMAGE = "browserenv:latest"
#: ``read_page``'s default bound (about 2,000 tokens), as the server's MCP tool has it.
DEFAULT_MAX_CHARS = 8000
#: The longest ``request_human`` may ask the server to wait (its tool's ``wait_seconds`` maximum);
#: the server holds every wait to its own ``BROWSER_ASK_WAIT_SECONDS`` too.
MAX_ASK_WAIT_S = 3600
#: How long ``from_docker_image`` waits for the container's ``/health``.
DOCKER_READY_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class PageText:
    """The page's visible text in the server's compact form: one line per line of text,
    ``x,y,w,h [marker] text``, the box in screenshot pixels (its centre is a point ``click``
    takes). ``truncated`` is true when lines were left out (the last line is then
    ``[truncated]``). Reading never steps the episode."""

    text: str
    truncated: bool
    url: str
    episode_id: Optional[str]
    step: int


@dataclass(frozen=True)
class Picture:
    """A picture of the page taken without acting (the server's ``capture`` tool): ``png`` is
    base64, ``width`` x ``height`` pixels, of ``region`` (``[x0, y0, x1, y1]`` in screenshot
    pixels) drawn at ``scale`` picture pixels per screenshot pixel. Fields holding a secret are
    covered. Taking it never steps the episode."""

    png: str
    url: str
    region: List[int]
    scale: float
    width: int
    height: int
    episode_id: Optional[str]
    step: int


@dataclass(frozen=True)
class HumanAnswer:
    """What ``request_human`` returns once a person took control and handed back: the page as
    they left it (``observation``, with ``done`` and ``reward``), who they were (``human``), what
    they said (``human_note``, None when they said nothing) and what they did (``human_steps``,
    ``[{"step", "action", "url", "error"}]``, a secret they typed shown as
    ``<redacted:N characters>``)."""

    observation: BrowserObservation
    human: str
    human_note: Optional[str]
    human_steps: List[Dict[str, Any]]
    episode_id: Optional[str]
    step: int


#: Settings whose values are secrets: passed to ``docker run`` by name, never in its arguments,
#: and never repeated in an error.
_SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSW|KEY|CREDENTIAL|AUTH", re.IGNORECASE)


class _LocalDockerProvider(LocalDockerProvider):
    """OpenEnv's ``LocalDockerProvider`` (its container name, port, readiness and stop), with the
    container's secrets kept out of ``docker run``'s command line, which other local users can
    read (``ps``) and which OpenEnv's provider repeats in its error when the run fails: each is
    passed by name (``-e BROWSER_API_TOKEN``), its value in the ``docker`` command's own
    environment. The port is published on 127.0.0.1 alone: the token is what keeps others out,
    and nothing off the machine needs to try it."""

    def start_container(
        self,
        image: str,
        port: Optional[int] = None,
        env_vars: Optional[Dict[str, str]] = None,
        **kwargs: Any,
    ) -> str:
        if port is None:
            port = self._find_available_port()
        self._container_name = self._generate_container_name(image)
        command = ["docker", "run", "-d", "--name", self._container_name, "-p", f"127.0.0.1:{port}:8000"]
        environment = dict(os.environ)
        for key, value in (env_vars or {}).items():
            if _SECRET_NAME.search(key) and not key.upper().startswith("DOCKER_"):
                command.extend(["-e", key])
                environment[key] = value
            else:
                command.extend(["-e", f"{key}={value}"])
        command.append(image)
        try:
            result = subprocess.run(command, capture_output=True, text=True, check=True, env=environment)
        except subprocess.CalledProcessError as failed:
            message = (
                f"Failed to start Docker container.\nCommand: {' '.join(command)}\n"
                f"Exit code: {failed.returncode}\nStderr: {failed.stderr}\nStdout: {failed.stdout}"
            )
            error = RuntimeError(_scrub(message, _secret_values(env_vars)))
        else:
            self._container_id = result.stdout.strip()
            time.sleep(1)
            return f"http://127.0.0.1:{port}"
        # Raised outside the handler: the CalledProcessError (its command) is not chained to it.
        raise error


def _secret_values(env_vars: Optional[Dict[str, str]]) -> list:
    return [value for key, value in (env_vars or {}).items() if value and _SECRET_NAME.search(key)]


def _scrub(text: str, values: Iterable[str]) -> str:
    for value in values:
        text = text.replace(value, "***")
    return text


def _without_secrets(error: BaseException, values: list) -> Optional[BaseException]:
    """``error`` again without ``values`` in its message or in any exception it is chained to
    (a provider's ``docker run`` error quotes its command, and ``CalledProcessError`` its
    arguments), or None when none of them holds one."""
    chain, seen = [], set()
    link: Optional[BaseException] = error
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        chain.append(link)
        link = link.__cause__ or link.__context__
    if not any(value in f"{link!s} {link!r}" for link in chain for value in values):
        return None
    message = _scrub(str(error), values)
    try:
        scrubbed = type(error)(message)
    except Exception:  # noqa: BLE001 - a type that takes other arguments
        scrubbed = RuntimeError(message)
    if any(value in f"{scrubbed!s} {scrubbed!r}" for value in values):
        scrubbed = RuntimeError(message)
    return scrubbed


class BrowserClient(EnvClient[BrowserAction, BrowserObservation, BrowserState]):
    """Typed client: ``BrowserAction`` in, ``StepResult[BrowserObservation]`` out.

    Args:
        base_url: the server, ``http://host:port`` (the client talks to ``ws://host:port/ws``).
        token: the server's ``BROWSER_API_TOKEN``, sent as ``Authorization: Bearer TOKEN``.
        headers: more HTTP headers for the WebSocket's opening request.
        **kwargs: the rest of ``EnvClient``'s arguments (``message_timeout_s``, ``provider``, ...).
    """

    def __init__(
        self,
        base_url: Optional[str] = None,
        *,
        token: Optional[str] = None,
        headers: Optional[Dict[str, str]] = None,
        **kwargs: Any,
    ):
        if token:
            headers = {**(headers or {}), "Authorization": f"Bearer {token}"}
        super().__init__(base_url=base_url, headers=headers, **kwargs)
        self._mcp_id = 0

    # The seed's three conversions.

    def _step_payload(self, action: BrowserAction) -> Dict[str, Any]:
        if isinstance(action, dict):
            action = BrowserAction.model_validate(action)
        return action.model_dump()

    def _parse_result(self, payload: Dict[str, Any]) -> StepResult[BrowserObservation]:
        observation = BrowserObservation(
            **payload.get("observation", {}),
            done=payload.get("done", False),
            reward=payload.get("reward"),
        )
        return StepResult(
            observation=observation,
            reward=payload.get("reward"),
            done=payload.get("done", False),
            metadata=payload.get("metadata"),
        )

    def _parse_state(self, payload: Dict[str, Any]) -> BrowserState:
        return BrowserState.model_validate(payload)

    # The page's text.

    def read_page(self, max_chars: int = DEFAULT_MAX_CHARS) -> Any:
        """The current page's visible text (a ``PageText``), without acting: the server's
        ``read_page`` tool, called on this session through an OpenEnv ``mcp`` frame on the same
        WebSocket. Awaitable in async code, a value in sync code (like ``reset`` and ``step``)."""
        return self._dispatch(lambda: self._read_page_async(max_chars))

    async def _read_page_async(self, max_chars: int = DEFAULT_MAX_CHARS) -> PageText:
        facts = await self._call_tool_async("read_page", {"max_chars": max_chars})
        return PageText(
            text=facts.get("text", ""),
            truncated=bool(facts.get("truncated", False)),
            url=facts.get("url", ""),
            episode_id=facts.get("episode_id"),
            step=int(facts.get("step", 0)),
        )

    # A picture without acting.

    def capture(self, region: Optional[List[int]] = None, scale: Optional[float] = None) -> Any:
        """A fresh picture of the page without acting (a ``Picture``): the whole viewport as it is
        now, or ``region`` ``[x0, y0, x1, y1]`` (screenshot pixels, x1 and y1 excluded) drawn again
        at ``scale`` (0.25..4; by default the largest at which the region fills 800x600): more
        pixels of the page, not an enlarged screenshot. The server's ``capture`` tool, on this
        session. Awaitable in async code, a value in sync code."""
        return self._dispatch(lambda: self._capture_async(region, scale))

    async def _capture_async(self, region: Optional[List[int]] = None, scale: Optional[float] = None) -> Picture:
        arguments: Dict[str, Any] = {}
        if region is not None:
            arguments["region"] = list(region)
        if scale is not None:
            arguments["scale"] = scale
        data = await self._call_tool_async("capture", arguments)
        return Picture(
            png=data.get("screenshot", ""),
            url=data.get("url", ""),
            region=list(data.get("region") or []),
            scale=float(data.get("scale", 1.0)),
            width=int(data.get("width", 0)),
            height=int(data.get("height", 0)),
            episode_id=data.get("episode_id"),
            step=int(data.get("step", 0)),
        )

    # A person's help.

    def request_human(self, reason: str, wait_seconds: Optional[int] = None) -> Any:
        """Ask the people watching this session for help (a login, a captcha, a page the agent
        cannot get past): they see ``reason``, one of them takes control (``browserenv-tui
        watch``), acts and hands back, maybe with a note. Returns a ``HumanAnswer`` then; waits
        at most ``wait_seconds`` (1..3600; by default, and in any case, at most the server's
        ``BROWSER_ASK_WAIT_SECONDS``), and raises ``RuntimeError`` when nobody answered in time.
        The server's ``request_human`` tool, through an OpenEnv ``mcp`` frame on this session's
        WebSocket. Awaitable in async code, a value in sync code."""
        return self._dispatch(lambda: self._request_human_async(reason, wait_seconds))

    async def _request_human_async(self, reason: str, wait_seconds: Optional[int] = None) -> HumanAnswer:
        arguments: Dict[str, Any] = {"reason": reason}
        if wait_seconds is not None:
            arguments["wait_seconds"] = wait_seconds
        # The answer comes after the person (the wait), then as fast as any other.
        waited = wait_seconds if wait_seconds is not None else MAX_ASK_WAIT_S
        data = await self._call_tool_async("request_human", arguments, waited + self._message_timeout)
        metadata = data.get("metadata") or {}
        observation = BrowserObservation(
            screenshot=data.get("screenshot", ""),
            url=data.get("url", ""),
            error=data.get("error", ""),
            metadata=metadata,
            done=bool(data.get("done", False)),
            reward=data.get("reward"),
        )
        return HumanAnswer(
            observation=observation,
            human=metadata.get("human", ""),
            human_note=metadata.get("human_note"),
            human_steps=list(metadata.get("human_steps") or []),
            episode_id=data.get("episode_id"),
            step=int(data.get("step", 0)),
        )

    async def _call_tool_async(
        self, name: str, arguments: Dict[str, Any], timeout_s: Optional[float] = None
    ) -> Dict[str, Any]:
        """Call the server's MCP tool ``name`` on this session (an OpenEnv ``mcp`` frame): its
        ``data``. ``timeout_s``: how long its answer may take, when longer than the client's
        ``message_timeout_s``."""
        self._mcp_id += 1
        request = {
            "jsonrpc": "2.0",
            "id": self._mcp_id,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }
        usual = self._message_timeout
        # EnvClient reads every answer within message_timeout_s; a tool that waits for a person
        # needs longer, for this one answer only.
        self._message_timeout = max(usual, timeout_s or 0)
        try:
            response = await self._send_and_receive({"type": "mcp", "data": request})
        finally:
            self._message_timeout = usual
        reply = response.get("data") or {}
        if response.get("type") != "mcp" or reply.get("id") != self._mcp_id:
            raise RuntimeError(f"unexpected reply to {name}: {str(response)[:200]}")
        if "error" in reply:
            error = reply["error"] or {}
            raise RuntimeError(f"{name} failed: {error.get('message', error)}")
        return (reply.get("result") or {}).get("data") or {}

    # Containers.

    @classmethod
    def from_docker_image(
        cls,
        image: str = DEFAULT_IMAGE,
        provider: Any = None,
        *,
        token: Optional[str] = None,
        env_vars: Optional[Dict[str, str]] = None,
        ready_timeout_s: float = DOCKER_READY_TIMEOUT_S,
        **kwargs: Any,
    ) -> "_BootstrapResult[BrowserClient]":
        """Start the server's image with OpenEnv's provider (``LocalDockerProvider`` unless
        another is given), wait for its ``/health``, and connect: ``await`` the result for an
        async client, or call ``.sync()`` on it for a sync one. ``close()`` stops the container.

        The image listens on 0.0.0.0:8000, where the server refuses to start without a token:
        a random one is made (or ``token``, or ``env_vars["BROWSER_API_TOKEN"]``), passed to the
        container and sent by the client. ``env_vars`` are further server settings
        (``BROWSER_MAX_SESSIONS``, ``BROWSER_TASKS=/opt/browserenv/tasks/demo.jsonl``, ...);
        ``kwargs`` go to ``provider.start_container``.

        The token (and any setting named like a secret) never reaches an error raised from here:
        the default provider passes it to ``docker run`` by name, not on its command line, and
        publishes the port on 127.0.0.1 only; another provider's error that quotes it is raised
        again with ``***`` in its place and without the exceptions it was chained to."""
        env = dict(env_vars or {})
        token = token or env.get("BROWSER_API_TOKEN") or secrets.token_urlsafe(24)
        env["BROWSER_API_TOKEN"] = token
        hidden = sorted({token, *_secret_values(env)}, key=len, reverse=True)

        def bootstrap() -> "BrowserClient":
            scrubbed = None
            try:
                started = provider if provider is not None else _LocalDockerProvider()
                try:
                    base_url = started.start_container(image, env_vars=env, **kwargs)
                    started.wait_for_ready(base_url, timeout_s=ready_timeout_s)
                    return cls(base_url=base_url, provider=started, token=token)
                except BaseException:
                    started.stop_container()
                    raise
            except BaseException as error:
                scrubbed = _without_secrets(error, hidden)
                if scrubbed is None:
                    raise
            # Outside the handler: nothing chains the original (which quotes the token) to it.
            raise scrubbed

        return _BootstrapResult(bootstrap)


__all__ = ["BrowserClient", "DEFAULT_IMAGE", "HumanAnswer", "MAX_ASK_WAIT_S", "PageText", "Picture"]
