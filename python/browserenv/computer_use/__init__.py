"""The major vendors' computer-use tools on a browserenv session, one module per vendor.

Each module gives the tool declaration to hand the model, runs one model turn's calls as steps on
a session, and answers in the vendor's own shape (the screenshot as the vendor takes images, the
URL, a call that was not done as the vendor's error result, naming the call):

- ``browserenv.computer_use.openai``: OpenAI's ``computer`` tool (the Responses API's
  ``computer_call``, one ``action`` or batched ``actions``) -> ``computer_call_output``;
- ``browserenv.computer_use.anthropic``: Anthropic's ``computer_toolset_20260801`` and the older
  ``computer_20251124`` / ``computer_20250124`` tools -> ``tool_result`` blocks;
- ``browserenv.computer_use.gemini``: Gemini's computer use (browser environment) ->
  ``function_response`` parts.

They share ``Computer`` (``session.py``: the session, the pointer, pictures taken without a step)
and one table of key names (``keys.py``). None of them imports a vendor's SDK: calls may be the
SDK's objects or their dicts, and answers are dicts the SDKs take. docs/training.md shows a loop
per vendor; examples/computer_use_*.py are the loops, run against the real APIs given a key.
"""

from .session import CallFailed, Computer

__all__ = ["CallFailed", "Computer"]
