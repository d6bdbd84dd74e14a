"""The Makefile's install steps, on a machine that lacks what each installs (`make test` runs this
first; it installs nothing and takes a few seconds).

Each test runs one install target (`make -C <repo> TARGET`, or deploy/docker/base-images.sh) with a
PATH of its own: a folder of links to every command of this machine's PATH and sbin folders, with
stand-ins for every tool an install step looks for, less the tool under test, and a recording
stand-in for ``apt-get`` (and ``sudo``). The stand-in apt-get logs its arguments, and "installs" a
package by putting stand-ins for the commands (or files) that package provides in place, so the
step goes on as on a real machine. Each test then checks which packages apt-get was asked for (the
one that provides the hidden tool, nothing else) and that the step succeeded; with nothing hidden,
no step calls apt-get. A missing install step (a tool the Makefile does not look for, a wrong
package) fails here, not on a new machine.

Nothing real runs: no apt-get, sudo, Docker, dockerd, pip or mmdebstrap (their stand-ins answer).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent.parent
MAKE = shutil.which("make")
# The folders this machine's commands are in: PATH, and the sbin folders a user's PATH may lack.
SEARCH = [d for d in os.environ.get("PATH", "").split(os.pathsep) if d] + ["/usr/local/sbin", "/usr/sbin", "/sbin"]

# The tools the install steps look for on PATH, each with the Debian package that provides it.
COMMANDS = {
    "Xvfb": "xvfb",
    "xterm": "xterm",
    "kitty": "kitty",
    "import": "imagemagick",
    "xdotool": "xdotool",
    "tmux": "tmux",
    "cc": "gcc",
    "strip": "binutils",
    "openssl": "openssl",
    "haproxy": "haproxy",
    "docker-compose": "docker-compose",
    "docker": "docker.io",
    "dockerd": "docker.io",
    "python3": "python3",
    "mmdebstrap": "mmdebstrap",
    "wget": "wget",
    "npm": "npm",
}
# The files they look for (Makefile variables, pointed at files of the test's own).
FILES = {
    "CHROMIUM": "chromium-headless-shell",
    "FULL_CHROMIUM": "chromium",
    "DEJAVU": "fonts-dejavu-core",
    "LIBC_DEV": "libc6-dev",
}
# Not an install step's: what the stand-ins need to be there for the steps to run on.
OTHERS = ["cargo"]

# One program for every stand-in; it knows which it is by the name it was run by.
STUB = r'''
import json, os, sys
from pathlib import Path

name = Path(sys.argv[0]).name
args = sys.argv[1:]
state = Path(os.environ["STUB_STATE"])
with open(os.environ["STUB_LOG"], "a") as log:
    log.write(json.dumps({"tool": name, "args": args,
                          "frontend": os.environ.get("DEBIAN_FRONTEND")}) + "\n")


def provide(package):
    provides = json.loads(Path(os.environ["STUB_PROVIDES"]).read_text())
    if package not in provides:
        print(f"E: Unable to locate package {package}", file=sys.stderr)
        sys.exit(100)
    for thing in provides[package]:
        if thing.startswith("/"):
            Path(thing).parent.mkdir(parents=True, exist_ok=True)
            Path(thing).touch()
        elif thing.startswith("state:"):
            (state / thing[6:]).touch()
        else:
            link = Path(os.environ["STUB_BIN"]) / thing
            if link.is_symlink() or link.exists():
                link.unlink()
            link.symlink_to(os.environ["STUB_PROGRAM"])


if name == "sudo":
    os.execvp(args[0], args)
elif name == "apt-get":
    if (state / "apt-fails").exists():
        sys.exit(100)
    words, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif arg == "-o":
            skip = True
        elif not arg.startswith("-"):
            words.append(arg)
    if words[0] == "install":
        for package in words[1:]:
            provide(package)
elif name == "docker":
    if args[:1] == ["info"]:
        sys.exit(0 if (state / "daemon").exists() else 1)
    if args[:2] == ["compose", "version"]:
        sys.exit(1)
    if args[:2] == ["image", "inspect"]:
        images = (state / "images").read_text().split() if (state / "images").exists() else []
        if args[-1] not in images:
            sys.exit(1)
        if "-f" in args:
            print(82000000)
    elif args[:1] == ["pull"]:
        sys.exit(1)
    elif args[:1] == ["import"]:
        with open(state / "images", "a") as images:
            images.write(args[-1] + "\n")
elif name == "dockerd":
    (state / "daemon").touch()
elif name == "python3":
    if args[:1] == ["-c"]:
        sys.exit(0 if "ensurepip" not in args[1] or (state / "venv").exists() else 1)
    if args[:2] == ["-m", "venv"]:
        if not (state / "venv").exists():
            print("ensurepip is not available: apt install python3-venv", file=sys.stderr)
            sys.exit(1)
        bin = Path(args[2]) / "bin"
        bin.mkdir(parents=True, exist_ok=True)
        for tool in ("python", "pip"):
            (bin / tool).symlink_to(os.environ["STUB_PROGRAM"])
'''


class Machine:
    """A PATH of this machine's commands with stand-ins, less what a test hides."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.bin = tmp / "bin"
        self.state = tmp / "state"
        self.files = tmp / "files"
        self.log = tmp / "calls.jsonl"
        for folder in (self.bin, self.state, self.files):
            folder.mkdir()
        self.program = tmp / "stub.py"
        self.program.write_text(f"#!{sys.executable}\n{STUB}")
        self.program.chmod(0o755)
        for folder in SEARCH:
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue
            for entry in entries:
                link = self.bin / entry.name
                if link.is_symlink() or not entry.is_file() or not os.access(entry.path, os.X_OK):
                    continue
                link.symlink_to(entry.path)
        self.paths = {var: self.files / var.lower() for var in FILES}
        provides: dict[str, list[str]] = {}
        for tool, package in COMMANDS.items():
            provides.setdefault(package, []).append(tool)
        for var, package in FILES.items():
            provides.setdefault(package, []).append(str(self.paths[var]))
        provides["gcc"].append("gcc")
        provides["python3-venv"] = ["state:venv"]
        (tmp / "provides.json").write_text(json.dumps(provides))
        for tool in [*COMMANDS, *OTHERS, "apt-get", "sudo"]:
            self.stub(tool)
        for path in self.paths.values():
            path.touch()
        # What a machine with every tool has: python3 with venv, a Docker daemon that answers.
        (self.state / "venv").touch()
        (self.state / "daemon").touch()

    def stub(self, tool: str) -> None:
        link = self.bin / tool
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(self.program)

    def hide(self, tool: str) -> None:
        """Takes a command (or a file of FILES, by its variable) off the machine."""
        if tool in self.paths:
            self.paths[tool].unlink()
        else:
            (self.bin / tool).unlink()

    def env(self) -> dict[str, str]:
        env = {
            key: value
            for key, value in os.environ.items()
            if key not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "TOOL_PATH", "SUDO")
        }
        env.update(
            PATH=str(self.bin),
            STUB_STATE=str(self.state),
            STUB_LOG=str(self.log),
            STUB_BIN=str(self.bin),
            STUB_PROGRAM=str(self.program),
            STUB_PROVIDES=str(self.tmp / "provides.json"),
        )
        return env

    def make(self, target: str, *variables: str, sudo: str = "") -> subprocess.CompletedProcess:
        assigned = [f"{var}={path}" for var, path in self.paths.items()]
        command = [
            MAKE, "-C", str(REPO_ROOT), "--no-print-directory", target, *assigned,
            f"TOOL_PATH={self.bin}", f"SUDO={sudo}", f"DOCKERD_LOG={self.tmp / 'dockerd.log'}",
            f"VENV={self.tmp / 'venv'}", f"MCP2_VENV={self.tmp / 'venv-mcp2'}", *variables,
        ]
        return subprocess.run(command, env=self.env(), capture_output=True, text=True, timeout=120)

    def run(self, *command: str) -> subprocess.CompletedProcess:
        return subprocess.run(command, env=self.env(), capture_output=True, text=True, timeout=120, cwd=REPO_ROOT)

    def calls(self, tool: str) -> list[list[str]]:
        if not self.log.exists():
            return []
        lines = [json.loads(line) for line in self.log.read_text().splitlines()]
        return [line["args"] for line in lines if line["tool"] == tool]

    def apt_calls(self) -> list[dict]:
        lines = [json.loads(line) for line in self.log.read_text().splitlines()] if self.log.exists() else []
        return [line for line in lines if line["tool"] == "apt-get"]

    def installed(self) -> list[list[str]]:
        """The package lists of each `apt-get install`, after an `apt-get update` each."""
        lists, updated = [], False
        for call in self.apt_calls():
            words = [arg for i, arg in enumerate(call["args"]) if not arg.startswith("-") and call["args"][i - 1] != "-o"]
            if words[0] == "update":
                updated = True
            elif words[0] == "install":
                assert updated, f"apt-get install without an apt-get update first: {call['args']}"
                assert "-y" in call["args"], call["args"]
                assert call["frontend"] == "noninteractive", call
                lists.append(words[1:])
        return lists


@pytest.fixture
def machine(tmp_path) -> Machine:
    return Machine(tmp_path)


def explain(proc: subprocess.CompletedProcess) -> str:
    return f"exit {proc.returncode}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"


# Each install target, each tool it installs, and the package that provides it.
CASES = [
    ("chromium", "CHROMIUM", "chromium-headless-shell"),
    ("chromium", "FULL_CHROMIUM", "chromium"),
    ("terminals", "Xvfb", "xvfb"),
    ("terminals", "xterm", "xterm"),
    ("terminals", "kitty", "kitty"),
    ("terminals", "import", "imagemagick"),
    ("terminals", "xdotool", "xdotool"),
    ("terminals", "tmux", "tmux"),
    ("terminals", "DEJAVU", "fonts-dejavu-core"),
    ("toolchain", "cc", "gcc"),
    ("toolchain", "LIBC_DEV", "libc6-dev"),
    ("toolchain", "strip", "binutils"),
    ("toolchain", "openssl", "openssl"),
    ("deploytools", "haproxy", "haproxy"),
    ("deploytools", "docker-compose", "docker-compose"),
    # The new machine: the Docker command line installed, its daemon not.
    ("docker", "dockerd", "docker.io"),
    ("docker", "docker", "docker.io"),
    ("python-venv", "python3", "python3-venv"),
    ("archivetools", "wget", "wget"),
    ("archivetools", "npm", "npm"),
]
TARGETS = sorted({target for target, _, _ in CASES})


@pytest.mark.parametrize(("target", "tool", "package"), CASES, ids=[f"{t}-{tool}" for t, tool, _ in CASES])
def test_a_missing_tool_gets_its_package(machine, target, tool, package):
    machine.hide(tool)
    proc = machine.make(target)
    assert proc.returncode == 0, explain(proc)
    installed = machine.installed()
    assert len(installed) == 1 and package in installed[0], f"apt-get install calls: {installed}\n{explain(proc)}"
    # Only what is missing (and, for a venv, python3 itself, which apt-get leaves as it is).
    assert set(installed[0]) <= {package, "python3"}, installed
    if target == "deploytools":
        assert "--no-install-recommends" in machine.apt_calls()[-1]["args"]
    assert f"installing Debian's {' '.join(installed[0])}" in proc.stdout, proc.stdout


@pytest.mark.parametrize("target", TARGETS)
def test_nothing_missing_installs_nothing(machine, target):
    proc = machine.make(target)
    assert proc.returncode == 0, explain(proc)
    assert machine.apt_calls() == [], machine.apt_calls()


def test_every_install_target_runs_before_the_tests():
    makefile = (REPO_ROOT / "Makefile").read_text()
    prerequisites = re.search(r"^test:(.*)$", makefile, re.M).group(1).split()
    recipe = makefile.split("\ntest:", 1)[1].split("\n\n", 1)[0]
    for target in TARGETS:
        if target == "python-venv":
            assert re.search(r"^\$\(VENV\)/\.installed:.*\|\s*python-venv", makefile, re.M)
            assert re.search(r"^\$\(MCP2_VENV\)/\.installed:.*\|\s*python-venv", makefile, re.M)
        else:
            assert target in prerequisites, f"make test does not run make {target}"
    assert "$(MAKE) --no-print-directory venv" in recipe
    assert "tests/python/test_install.py" in recipe


def test_docker_with_only_its_command_line_installs_docker_io_and_starts_dockerd(machine):
    """The issue: `docker` there, `dockerd` not, no daemon answering."""
    machine.hide("dockerd")
    (machine.state / "daemon").unlink()
    proc = machine.make("docker")
    assert proc.returncode == 0, explain(proc)
    assert machine.installed() == [["docker.io"]]
    assert machine.calls("dockerd") == [[]], "dockerd was not started"
    assert "dockerd is up" in proc.stdout, proc.stdout


def test_not_root_installs_with_sudo(machine):
    machine.hide("dockerd")
    (machine.state / "daemon").unlink()
    proc = machine.make("docker", sudo="sudo")
    assert proc.returncode == 0, explain(proc)
    sudo = machine.calls("sudo")
    assert any(call[0] == "apt-get" and "update" in call for call in sudo), sudo
    assert any(call[:3] == ["env", "DEBIAN_FRONTEND=noninteractive", "apt-get"] and "docker.io" in call for call in sudo), sudo
    assert any(call[:2] == ["sh", "-c"] and call[-1].endswith("/dockerd") for call in sudo), "dockerd not started with sudo"


def test_a_failed_install_says_what_to_run(machine):
    machine.hide("dockerd")
    (machine.state / "apt-fails").touch()
    proc = machine.make("docker")
    assert proc.returncode != 0
    assert "Could not install them. Run: sudo apt-get install docker.io" in proc.stdout, explain(proc)


def test_venv_with_no_python3_installs_python3_venv_and_makes_both_venvs(machine):
    machine.hide("python3")
    (machine.state / "venv").unlink()
    proc = machine.make("venv")
    assert proc.returncode == 0, explain(proc)
    assert machine.installed() == [["python3", "python3-venv"]]
    pips = machine.calls("pip")
    assert ["install", "-q", "-r", "tests/python/requirements.txt"] in pips, pips
    assert ["install", "-q", "-r", "tests/python/requirements-mcp2.txt"] in pips, pips


def test_venv_with_a_python3_without_ensurepip_installs_python3_venv(machine):
    """Debian's python3 alone: `python3 -m venv` fails until python3-venv is there."""
    (machine.state / "venv").unlink()
    proc = machine.make("venv")
    assert proc.returncode == 0, explain(proc)
    assert machine.installed() == [["python3", "python3-venv"]]


def test_toolchain_without_cargo_says_to_install_rust(machine):
    machine.hide("cargo")
    proc = machine.make("toolchain")
    assert proc.returncode != 0
    assert "install Rust with rustup" in proc.stdout, explain(proc)
    assert machine.apt_calls() == []


def test_base_images_installs_mmdebstrap_to_make_the_runtime_stages_base(machine, tmp_path):
    """No registry answers (docker pull fails) and no mmdebstrap: `make image`'s stand-in base."""
    machine.hide("mmdebstrap")
    proc = machine.run("deploy/docker/base-images.sh", "--target", "runtime", "Dockerfile")
    assert proc.returncode == 0, explain(proc)
    assert machine.installed() == [["mmdebstrap"]]
    assert len(machine.calls("mmdebstrap")) == 1
    imports = [call[-1] for call in machine.calls("docker") if call[:1] == ["import"]]
    # The runtime stage's base only: `make image` builds no Rust image.
    assert imports == ["debian:bookworm-slim"], imports
