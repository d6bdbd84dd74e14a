"""A computer-use loop: OpenAI's `computer` tool (the Responses API) driving a browserenv session.

    OPENAI_API_KEY=... python examples/computer_use_openai.py --server http://127.0.0.1:8000 \
        --start-url https://example.com --task "Open the page's 'More information' link"

The model sees the task and the first screenshot, answers with `computer_call` items, which
`browserenv.computer_use.openai` runs on the session and answers with `computer_call_output`s;
the loop ends when the model answers with a message and no call. `run` takes any object with
`responses.create` (the SDK's `OpenAI()`, or a scripted stand-in: tests/python/test_computer_use_examples.py).
"""

from __future__ import annotations

import argparse
import os

from browserenv import BrowserClient
from browserenv.computer_use import Computer
from browserenv.computer_use import openai as cua


def run(model_client, task: str, start_url: str, server_url: str, *, model: str = "computer-use",
        token: str | None = None, max_turns: int = 20) -> dict:
    with BrowserClient(base_url=server_url, token=token).sync() as browser:
        computer = Computer(browser)
        computer.reset(start_url=start_url)
        adapter = cua.OpenAIComputer(computer)
        history: list = [{"role": "user", "content": [
            {"type": "input_text", "text": task},
            {"type": "input_image", "image_url": f"data:image/png;base64,{computer.screenshot}"},
        ]}]
        answer = ""
        for turn in range(1, max_turns + 1):
            response = model_client.responses.create(model=model, tools=[cua.tool()], input=history, truncation="auto")
            history += [item.model_dump(exclude_none=True) for item in response.output]
            calls = [item for item in response.output if item.type == "computer_call"]
            if not calls:
                answer = response.output_text
                break
            for call in calls:
                history += adapter.run(call)
        return {"answer": answer, "url": computer.url, "turns": turn,
                "title": computer.last.observation.metadata.get("title")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default=os.environ.get("BROWSERENV_URL", "http://127.0.0.1:8000"))
    parser.add_argument("--start-url", required=True)
    parser.add_argument("--task", required=True)
    parser.add_argument("--model", default=os.environ.get("OPENAI_MODEL", "gpt-5.5"))
    args = parser.parse_args()
    from openai import OpenAI  # the real API: OPENAI_API_KEY

    finished = run(OpenAI(), args.task, args.start_url, args.server, model=args.model,
                   token=os.environ.get("BROWSER_API_TOKEN"))
    print(finished["answer"])


if __name__ == "__main__":
    main()
