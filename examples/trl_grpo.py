"""Train a web agent with TRL's GRPO on the browserenv demo tasks (needs a GPU; not run in CI).

One rollout is one browser episode: TRL makes a ``browserenv.trl.BrowserEnv`` per rollout, calls
``reset(**row)`` with the row's ``task_id``, lets the model call the browser's tools (click,
type_text, press_key, scroll, go_back, wait, finish, read_page) and takes the episode's reward from
``get_reward()``: 1.0 when the task's check passes at ``finish``, 0.0 otherwise, ``None`` (left out)
when the browser failed. Setup (docs/training.md):

    pip install "./python[vision]" "trl>=1.16" "transformers>=5.2" datasets   # plus torch, vllm
    BROWSER_API_TOKEN=secret browserenv-server --site assets/site --tasks assets/tasks/demo.jsonl \\
        --max-sessions 16 --session-timeout 0 --port 8001 &
    BROWSERENV_URL=http://127.0.0.1:8001 BROWSER_API_TOKEN=secret python examples/trl_grpo.py

``--max-sessions`` must cover the rollouts in flight (``per_device_train_batch_size`` x
``gradient_accumulation_steps`` per process by default); port 8001 leaves 8000 to a vLLM server.
``--vision`` trains a vision-language model on the screenshots as well as the text.
"""

from __future__ import annotations

import argparse
import json
import os
import urllib.request

from datasets import Dataset
from trl import GRPOConfig, GRPOTrainer

from browserenv.trl import BrowserEnv, VisionBrowserEnv

SYSTEM = (
    "You operate a web browser through tools to do the user's task. After each action you get the "
    "page's URL and its visible text, one line per line on screen as `x,y,w,h [marker] text`, where "
    "x,y,w,h is the line's box in pixels of the 800x600 screen: to click a link or a field, click "
    "the centre of its box (x + w/2, y + h/2). Click a field before typing into it. Only what is "
    "on screen is listed: scroll to see more. When the task is done, call finish, with the answer "
    "if the task asks for one. Do one action at a time."
)


def task_rows(url: str, token: str | None, split: str) -> list[dict]:
    """The server's tasks (OpenEnv's Task API), as dataset rows: a prompt and the task_id."""
    request = urllib.request.Request(
        f"{url}/browserenv/tasks",
        data=json.dumps({"split": split}).encode(),
        headers={"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        tasks = json.load(response)["tasks"]
    return [
        {
            "prompt": [
                {"role": "system", "content": SYSTEM},
                # reset() appends the task's instruction and the first page to this message.
                {"role": "user", "content": "Your task and the browser's first page:"},
            ],
            "task_id": task["task_id"],
        }
        for task in tasks
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=None, help="default: Qwen/Qwen3-1.7B, or Qwen/Qwen3-VL-2B-Instruct with --vision")
    parser.add_argument("--vision", action="store_true", help="hand the model each screenshot too")
    parser.add_argument("--split", default="demo", help="the task split (the --tasks file's stem)")
    parser.add_argument("--repeat", type=int, default=50, help="how often the dataset repeats the tasks")
    parser.add_argument("--output-dir", default="browserenv-grpo")
    args = parser.parse_args()

    url = os.environ.get("BROWSERENV_URL", "http://127.0.0.1:8000")
    token = os.environ.get("BROWSER_API_TOKEN")
    rows = task_rows(url, token, args.split) * args.repeat
    model = args.model or ("Qwen/Qwen3-VL-2B-Instruct" if args.vision else "Qwen/Qwen3-1.7B")

    trainer = GRPOTrainer(
        model=model,
        train_dataset=Dataset.from_list(rows),
        # The environment owns the reward (get_reward); no reward_funcs needed.
        environment_factory=VisionBrowserEnv if args.vision else BrowserEnv,
        args=GRPOConfig(
            output_dir=args.output_dir,
            use_vllm=True,
            vllm_mode="colocate",
            chat_template_kwargs={"enable_thinking": False},
            num_generations=4,
            per_device_train_batch_size=4,
            gradient_accumulation_steps=4,
            # Tokens over the whole episode: every tool result carries up to 8000 characters of text.
            max_completion_length=8192,
            max_tool_calling_iterations=15,
            learning_rate=1e-6,
            logging_steps=1,
            log_completions=True,
        ),
    )
    trainer.train()


if __name__ == "__main__":
    main()
