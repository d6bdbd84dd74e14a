"""A computer-use loop: Anthropic's computer toolset driving a browserenv session.

    ANTHROPIC_API_KEY=... python examples/computer_use_anthropic.py --server http://127.0.0.1:8000 \
        --start-url https://example.com --task "Open the page's 'More information' link"

The model sees the task and the first screenshot, answers with `tool_use` blocks of the toolset's
members, which `browserenv.computer_use.anthropic` runs on the session and answers with
`tool_result` blocks; the loop ends when a turn has no computer call. `run` takes any object with
`messages.create` (the SDK's `Anthropic()`, or a scripted stand-in:
tests/python/test_computer_use_examples.py). `--tool computer_20251124` uses the older tool (with
the beta header it needs).
"""

from __future__ import annotations

import argparse
import os

from browserenv import BrowserClient
from browserenv.computer_use import Computer
from browserenv.computer_use import anthropic as claude


def run(model_client, task: str, start_url: str, server_url: str, *, model: str = "claude", tool: str = claude.VERSIONS[0],
        token: str | None = None, max_turns: int = 20) -> dict:
    with BrowserClient(base_url=server_url, token=token).sync() as browser:
        computer = Computer(browser)
        computer.reset(start_url=start_url)
        adapter = claude.AnthropicComputer(computer)
        history: list = [{"role": "user", "content": [
            {"type": "text", "text": task},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": computer.screenshot}},
        ]}]
        answer = ""
        for turn in range(1, max_turns + 1):
            message = model_client.messages.create(model=model, max_tokens=4096, tools=[claude.tool(tool)],
                                                   messages=history)
            history.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in message.content]})
            results = adapter.run(message.content)
            if not results:
                answer = "".join(b.text for b in message.content if b.type == "text")
                break
            history.append({"role": "user", "content": results})
        return {"answer": answer, "url": computer.url, "turns": turn,
                "title": computer.last.observation.metadata.get("title")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default=os.environ.get("BROWSERENV_URL", "http://127.0.0.1:8000"))
    parser.add_argument("--start-url", required=True)
    parser.add_argument("--task", required=True)
    parser.add_argument("--model", default=os.environ.get("ANTHROPIC_MODEL", "claude-opus-5-5"))
    parser.add_argument("--tool", default=claude.VERSIONS[0], choices=claude.VERSIONS)
    args = parser.parse_args()
    import anthropic  # the real API: ANTHROPIC_API_KEY

    client = anthropic.Anthropic()
    if args.tool != claude.VERSIONS[0]:  # the older tools are betas
        beta = {"computer_20251124": "computer-use-2025-11-24", "computer_20250124": "computer-use-2025-01-24"}[args.tool]
        client = anthropic.Anthropic(default_headers={"anthropic-beta": beta})
    finished = run(client, args.task, args.start_url, args.server, model=args.model, tool=args.tool,
                   token=os.environ.get("BROWSER_API_TOKEN"))
    print(finished["answer"])


if __name__ == "__main__":
    main()
