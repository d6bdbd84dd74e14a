"""The vendors' example loops (examples/computer_use_*.py) run with a scripted stand-in for the
model: it answers with the vendor's own SDK types (no network), the loop runs the calls on real
Chromium and sends the results back, and the stand-in checks what it was sent.
"""

from __future__ import annotations

import base64
import importlib.util
import json

import pytest
from anthropic.types import Message
from google.genai import types as gtypes
from openai.types.responses import Response, ResponseComputerToolCall, ResponseOutputMessage

from conftest import REPO_ROOT, launch_server, png_size


def example(name: str):
    spec = importlib.util.spec_from_file_location(name, REPO_ROOT / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with launch_server(["--max-sessions", "2"], tmp_path_factory.mktemp("examples")) as url:
        yield url


class Scripted:
    """Answers each request with the next scripted turn and keeps the requests."""

    def __init__(self, turns):
        self.turns, self.requests = list(turns), []
        self.responses = self.messages = self.models = self

    def _next(self, **request):
        self.requests.append(request)
        return self.turns.pop(0)

    create = generate_content = _next


def test_the_openai_loop(server, pages_url):
    call = ResponseComputerToolCall(id="cu_1", call_id="call_1", type="computer_call", status="completed",
                                    pending_safety_checks=[], actions=[{"type": "click", "button": "left", "x": 100, "y": 35},
                                                                       {"type": "type", "text": "PELICAN"}])
    done = ResponseOutputMessage(id="msg_1", type="message", role="assistant", status="completed",
                                 content=[{"type": "output_text", "text": "Typed it.", "annotations": []}])
    model = Scripted([Response.model_construct(id=f"resp_{i}", object="response", status="completed", output=[item])
                      for i, item in enumerate([call, done])])
    finished = example("computer_use_openai").run(model, "Type PELICAN", f"{pages_url}computer.html", server)
    assert finished["answer"] == "Typed it." and finished["turns"] == 2
    assert json.loads(finished["title"])["v"] == "PELICAN"
    assert model.requests[0]["tools"] == [{"type": "computer"}]
    output = next(item for item in model.requests[1]["input"] if item.get("type") == "computer_call_output")
    assert output["call_id"] == "call_1"
    assert png_size(output["output"]["image_url"].split(",", 1)[1]) == (800, 600)


def test_the_anthropic_loop(server, pages_url):
    def message(*content, stop="tool_use"):
        return Message.model_validate({"id": "msg", "type": "message", "role": "assistant", "model": "claude-opus-5-5",
                                       "content": list(content), "stop_reason": stop,
                                       "usage": {"input_tokens": 1, "output_tokens": 1}})

    model = Scripted([
        message({"type": "tool_use", "id": "toolu_1", "name": "left_click", "input": {"coordinate": [100, 35]},
                 "toolset_name": "computer"},
                {"type": "tool_use", "id": "toolu_2", "name": "type", "input": {"text": "PELICAN"}, "toolset_name": "computer"}),
        message({"type": "text", "text": "Typed it."}, stop="end_turn"),
    ])
    finished = example("computer_use_anthropic").run(model, "Type PELICAN", f"{pages_url}computer.html", server)
    assert finished["answer"] == "Typed it." and json.loads(finished["title"])["v"] == "PELICAN"
    assert model.requests[0]["tools"] == [{"type": "computer_toolset_20260801"}]
    results = model.requests[1]["messages"][2]["content"]
    assert [r["tool_use_id"] for r in results] == ["toolu_1", "toolu_2"]
    assert all(r["toolset_name"] == "computer" and r["content"][1]["type"] == "image" for r in results)


def test_the_gemini_loop(server, pages_url):
    def turn(*parts):
        return gtypes.GenerateContentResponse(candidates=[gtypes.Candidate(content=gtypes.Content(role="model", parts=list(parts)))])

    model = Scripted([
        turn(gtypes.Part(function_call=gtypes.FunctionCall(name="type_text_at", args={"x": 125, "y": 59, "text": "PELICAN",
                                                                                      "press_enter": False}))),
        turn(gtypes.Part(text="Typed it.")),
    ])
    finished = example("computer_use_gemini").run(model, "Type PELICAN", f"{pages_url}computer.html", server)
    assert finished["answer"] == "Typed it." and json.loads(finished["title"])["v"] == "PELICAN"
    assert model.requests[0]["config"].tools[0].computer_use.environment == gtypes.Environment.ENVIRONMENT_BROWSER
    response = model.requests[1]["contents"][2].parts[0].function_response
    assert response.name == "type_text_at" and response.response["url"].endswith("computer.html")
    assert png_size(base64.b64encode(response.parts[0].inline_data.data).decode()) == (800, 600)
