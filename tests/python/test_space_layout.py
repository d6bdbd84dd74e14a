"""The folder `python/stage_space.py` makes for OpenEnv's CLI (docs/training.md, "Build and push
with OpenEnv's CLI"): what `openenv push` checks before it uploads (openenv 0.10.0's
``validate_env_structure``), `openenv validate --level static`, what push's own staging makes of it
for a Space (README front matter on port 8000, the Dockerfile's command kept), and that the folder,
like the Space it becomes, installs as the ``browserenv`` client package. `openenv build` itself
runs `docker build` on it, which test_image.py's image covers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from openenv.cli._cli_utils import validate_env_structure
from openenv.cli.commands.push import _load_ignore_patterns, _prepare_staging_directory

from conftest import REPO_ROOT

SCRIPT = REPO_ROOT / "python" / "stage_space.py"


@pytest.fixture(scope="module")
def staged(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("space") / "browserenv"
    run = subprocess.run([sys.executable, str(SCRIPT), str(out)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert f"openenv push {out} --repo-id <namespace>/browserenv" in run.stdout
    return out


def test_the_folder_has_the_repository_and_nothing_built(staged):
    for name in ("openenv.yaml", "README.md", "Dockerfile", ".dockerignore", "Cargo.toml", "Cargo.lock",
                 "src/lib.rs", "server/src/main.rs", "assets/tasks/demo.jsonl", "deploy/docker/healthcheck.sh",
                 "python/pyproject.toml", "python/browserenv/trl.py"):
        assert (staged / name).is_file(), name
    for name in ("target", ".venv", ".git", "python/build"):
        assert not (staged / name).exists(), name


def test_openenv_push_accepts_its_layout(staged):
    assert validate_env_structure(staged) == ["Recommended directory missing: outputs/"]


def test_openenv_validate_static_passes(staged):
    run = subprocess.run(
        [str(Path(sys.executable).parent / "openenv"), "validate", str(staged), "--level", "static"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0 and "Verdict: PASS" in run.stdout, run.stdout + run.stderr


def test_pushs_staging_makes_a_space_on_port_8000(staged, tmp_path):
    space = tmp_path / "staging"
    _prepare_staging_directory(staged, "browserenv", space, ignore_patterns=_load_ignore_patterns(staged, None))
    readme = (space / "README.md").read_text()
    assert readme.startswith("---\n") and "sdk: docker\n" in readme and "app_port: 8000\n" in readme
    dockerfile = (space / "Dockerfile").read_text()
    assert dockerfile.rstrip().endswith('CMD ["server"]')
    assert not (space / ".git").exists() and (space / "src" / "lib.rs").is_file()


def test_the_folder_installs_as_the_client_package(staged, tmp_path):
    target = tmp_path / "site"
    run = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--target", str(target), str(staged)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert sorted(p.name for p in (target / "browserenv").glob("*.py")) == [
        "__init__.py", "browsergym.py", "client.py", "hf_sandbox.py", "models.py", "trl.py"
    ]
    # The vendors' computer-use adapters, a package of their own.
    assert (target / "browserenv" / "computer_use" / "__init__.py").is_file()
    # OpenEnv's layout's client.py (at the folder's root) is the package's client.
    probe = subprocess.run(
        [sys.executable, "-c", "import client, browserenv.client as c; assert client.BrowserClient is c.BrowserClient"],
        capture_output=True,
        text=True,
        cwd=staged,
        env={**os.environ, "PYTHONPATH": str(target)},
        timeout=60,
    )
    assert probe.returncode == 0, probe.stderr


def test_a_folder_in_use_is_not_overwritten(staged):
    run = subprocess.run([sys.executable, str(SCRIPT), str(staged)], capture_output=True, text=True, timeout=60)
    assert run.returncode != 0 and "is not empty" in run.stderr


def test_untracked_files_are_never_staged(tmp_path):
    """A Space is public, and a working tree holds recordings (cookies, web archives), task packs
    and campaign folders that git does not track: only tracked files are staged."""
    root = tmp_path / "repo"
    (root / "python" / "browserenv").mkdir(parents=True)
    (root / "python" / "browserenv" / "__init__.py").write_text("")
    (root / "python" / "pyproject.toml").write_text("[project]\nname = 'browserenv'\n")
    (root / "openenv.yaml").write_text("name: browserenv\n")
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "tracked"], check=True)
    for name in ("runs/archives/x.warc.gz", "campaign/people/people.json", "notes.txt"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("cookie: session=secret\n")
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import stage_space
    finally:
        sys.path.remove(str(SCRIPT.parent))
    out = tmp_path / "out"
    staged = stage_space.stage(out, root)
    assert staged == ["openenv.yaml", "python/browserenv/__init__.py", "python/pyproject.toml"]
    for name in ("runs", "campaign", "notes.txt"):
        assert not (out / name).exists(), name


def test_the_dockerfile_builds_the_server_from_every_crate_it_depends_on():
    """`openenv build` and a plain `docker build .` compile the server in the Dockerfile's build
    stage (`make image` builds it on the host instead, so its tests do not run that stage): every
    workspace crate the server is built from must be copied there, manifest and sources, or that
    build fails. The crates come from `cargo metadata`, not from a list kept here."""
    meta = subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--no-deps", "--offline"],
        cwd=REPO_ROOT, capture_output=True, text=True, check=True,
    )
    packages = {p["name"]: p for p in json.loads(meta.stdout)["packages"]}
    needed, todo = set(), ["browserenv-server"]
    while todo:
        name = todo.pop()
        if name in needed:
            continue
        needed.add(name)
        todo += [d["name"] for d in packages[name]["dependencies"]
                 if d.get("path") and d["kind"] is None and d["name"] in packages]
    dockerfile = (REPO_ROOT / "Dockerfile").read_text()
    build_stage = dockerfile[dockerfile.index(" AS build"):]
    for name in sorted(needed):
        folder = Path(packages[name]["manifest_path"]).parent.relative_to(REPO_ROOT).as_posix()
        if folder == ".":
            assert "COPY Cargo.toml Cargo.lock ./" in build_stage and "COPY src src" in build_stage, name
        else:
            assert f"COPY {folder}/Cargo.toml {folder}/Cargo.toml" in build_stage, name
            assert f"COPY {folder} {folder}" in build_stage, name
