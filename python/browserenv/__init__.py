"""browserenv: the Python client of the browserenv server (a real Chromium behind OpenEnv's
reset/step/state protocol).

- ``BrowserAction``, ``BrowserObservation``, ``BrowserState``: the wire models (``models``).
- ``BrowserClient``: the typed OpenEnv client, async or ``.sync()`` (``client``); its
  ``request_human`` returns a ``HumanAnswer``.
- ``browserenv.trl.BrowserEnv``: an ``environment_factory`` class for TRL's ``GRPOTrainer``.
- ``browserenv.computer_use``: OpenAI's, Anthropic's and Gemini's computer-use calls run on a
  session, answered in each vendor's shape; ``browserenv.browsergym``: BrowserGym's coordinate
  actions.
- ``python -m browserenv.hf_sandbox``: the server's image in a Hugging Face Sandbox.
"""

from .client import DEFAULT_IMAGE, MAX_ASK_WAIT_S, BrowserClient, HumanAnswer, PageText, Picture
from .models import (
    MAX_SCROLL,
    MAX_TEXT_CHARS,
    OPS,
    SCREEN_HEIGHT,
    SCREEN_WIDTH,
    SUPPORTED_KEYS,
    BrowserAction,
    BrowserObservation,
    BrowserState,
)

__version__ = "0.1.0"

__all__ = [
    "BrowserAction",
    "BrowserClient",
    "BrowserObservation",
    "BrowserState",
    "DEFAULT_IMAGE",
    "HumanAnswer",
    "MAX_ASK_WAIT_S",
    "MAX_SCROLL",
    "MAX_TEXT_CHARS",
    "OPS",
    "PageText",
    "Picture",
    "SCREEN_HEIGHT",
    "SCREEN_WIDTH",
    "SUPPORTED_KEYS",
    "__version__",
]
