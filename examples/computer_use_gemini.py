"""A computer-use loop: Gemini's computer use driving a browserenv session.

    GEMINI_API_KEY=... python examples/computer_use_gemini.py --server http://127.0.0.1:8000 \
        --start-url https://example.com --task "Open the page's 'More information' link"

The model sees the task and the first screenshot, answers with function calls of the browser
environment (`click_at`, `type_text_at`, ...), which `browserenv.computer_use.gemini` runs on the
session and answers with `function_response` parts (the URL and the screenshot); the loop ends
when a turn has no function call. `run` takes any object with `models.generate_content` (the
SDK's `genai.Client()`, or a scripted stand-in: tests/python/test_computer_use_examples.py).
"""

from __future__ import annotations

import argparse
import base64
import os

from google.genai import types

from browserenv import BrowserClient
from browserenv.computer_use import Computer, gemini


def run(model_client, task: str, start_url: str, server_url: str, *, model: str = "gemini",
        token: str | None = None, search_url: str | None = None, max_turns: int = 20) -> dict:
    with BrowserClient(base_url=server_url, token=token).sync() as browser:
        computer = Computer(browser)
        computer.reset(start_url=start_url)
        adapter = gemini.GeminiComputer(computer, search_url=search_url)
        config = types.GenerateContentConfig(tools=[types.Tool.model_validate(adapter.tool())])
        contents = [types.Content(role="user", parts=[
            types.Part(text=task),
            types.Part.from_bytes(data=base64.b64decode(computer.screenshot), mime_type="image/png"),
        ])]
        answer = ""
        for turn in range(1, max_turns + 1):
            response = model_client.models.generate_content(model=model, contents=contents, config=config)
            content = response.candidates[0].content
            contents.append(content)
            calls = [part.function_call for part in content.parts or [] if part.function_call]
            if not calls:
                answer = "".join(part.text or "" for part in content.parts or [])
                break
            contents.append(types.Content(role="user", parts=[types.Part.model_validate(p) for p in adapter.run(calls)]))
        return {"answer": answer, "url": computer.url, "turns": turn,
                "title": computer.last.observation.metadata.get("title")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default=os.environ.get("BROWSERENV_URL", "http://127.0.0.1:8000"))
    parser.add_argument("--start-url", required=True)
    parser.add_argument("--task", required=True)
    parser.add_argument("--model", default=os.environ.get("GEMINI_MODEL", "gemini-3.5-flash"))
    parser.add_argument("--search-url", help="where the model's `search` goes (refused without it)")
    args = parser.parse_args()
    from google import genai  # the real API: GEMINI_API_KEY

    finished = run(genai.Client(), args.task, args.start_url, args.server, model=args.model,
                   search_url=args.search_url, token=os.environ.get("BROWSER_API_TOKEN"))
    print(finished["answer"])


if __name__ == "__main__":
    main()
