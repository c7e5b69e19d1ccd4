"""deploy/Dockerfile without a container engine: its shape is checked, and its build steps are run in a
fresh virtual environment, so a broken step (a package left out of COPY, a note or template missing from
the wheel, an install that no longer resolves, an index that does not build, a health check that fails)
fails CI.

How the steps are run here rather than in an image:
- every absolute path the Dockerfile names (/src, /wheels, /var/lib/…) lives under a temporary folder;
- `python` is the fresh environment's; pip gets `--no-deps` (and the wheel build `--no-build-isolation`)
  with PIP_NO_INDEX set: nothing is downloaded, the dependencies come from the environment running the
  tests, and every requirement the built wheel declares is then checked against it;
- the step that creates the system user needs root and is skipped (its user is checked by shape);
- the CMD binds 127.0.0.1 on a free port instead of 0.0.0.0:8000, and the HEALTHCHECK asks that port.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "deploy" / "Dockerfile"


@dataclass
class Stage:
    name: str
    base: str
    steps: list[tuple[str, str]] = field(default_factory=list)  # (instruction, arguments)


def parse(text: str) -> tuple[dict[str, str], list[Stage]]:
    """ARGs before the first FROM, and the stages with their instructions (continuation lines joined)."""
    logical, buf = [], ""
    for line in text.splitlines():
        if not buf and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.rstrip().endswith("\\"):
            buf += line.rstrip()[:-1] + " "
            continue
        logical.append(buf + line)
        buf = ""
    args: dict[str, str] = {}
    stages: list[Stage] = []
    for line in logical:
        instr, _, rest = line.strip().partition(" ")
        instr = instr.upper()
        if instr == "FROM":
            image, _, name = rest.partition(" AS ")
            for key, value in args.items():
                image = image.replace("${" + key + "}", value)
            stages.append(Stage(name.strip(), image.strip()))
        elif not stages and instr == "ARG":
            key, _, value = rest.partition("=")
            args[key.strip()] = value.strip()
        else:
            stages[-1].steps.append((instr, rest.strip()))
    return args, stages


def _stages() -> list[Stage]:
    return parse(DOCKERFILE.read_text(encoding="utf-8"))[1]


def _one(stage: Stage, instr: str) -> list[str]:
    return [rest for i, rest in stage.steps if i == instr]


def test_two_stages_and_a_slim_python_311_runtime():
    build, runtime = _stages()
    assert build.name == "build" and runtime.name == "runtime"
    assert re.fullmatch(r"python:3\.11-slim(-\w+)?", runtime.base), runtime.base
    assert any("pip wheel" in run for run in _one(build, "RUN"))
    assert any(c.startswith("--from=build ") for c in _one(runtime, "COPY"))


def test_the_runtime_has_no_compilers_and_runs_as_a_user():
    runtime = _stages()[1]
    runs = " ".join(_one(runtime, "RUN"))
    assert not re.search(r"\b(gcc|g\+\+|clang|build-essential|make|apt-get install)\b", runs)
    users = _one(runtime, "USER")
    assert users and users[-1] not in ("root", "0")
    user_at = max(i for i, (instr, _) in enumerate(runtime.steps) if instr == "USER")
    cmd_at = max(i for i, (instr, _) in enumerate(runtime.steps) if instr == "CMD")
    assert user_at < cmd_at


def test_it_serves_on_all_interfaces_and_checks_healthz():
    runtime = _stages()[1]
    cmd = json.loads(_one(runtime, "CMD")[-1])
    assert cmd[:2] == ["gpu-advisor", "serve"] and cmd[cmd.index("--host") + 1] == "0.0.0.0"
    health = _one(runtime, "HEALTHCHECK")[-1]
    assert "/healthz" in health and "CMD" in health
    assert any(run.strip() == "gpu-advisor kb index" for run in _one(runtime, "RUN"))


def test_dockerignore_lets_in_only_what_the_build_copies():
    ignore = (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
    allowed = {line[1:].rstrip("/") for line in ignore if line.startswith("!")}
    copied = {src.rstrip("/") for rest in _one(_stages()[0], "COPY") for src in rest.split()[:-1]}
    assert "**" in ignore and allowed == copied


# ---- the steps, run ----------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Local:
    """Maps the image's absolute paths into a temporary root."""

    PATH = re.compile(r"(?<![\w.:/])(/(?:[\w.-]+/?)+)")

    def __init__(self, root: Path):
        self.root = root

    def path(self, p: str) -> Path:
        return self.root / p.lstrip("/")

    def text(self, s: str) -> str:
        return self.PATH.sub(
            lambda m: str(self.path(m.group(1))).rstrip("/") + ("/" if m.group(1).endswith("/") else ""), s
        )


@pytest.mark.slow
def test_the_build_steps_install_and_serve(tmp_path):
    build, runtime = _stages()
    local = Local(tmp_path / "root")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    bindir = venv / "bin"
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("GPU_ADVISOR_", "CHROMA_", "EMBEDDINGS_", "REDIS_", "PIP_", "VIRTUAL_ENV"))
        and k not in ("DATABASE_URL", "PYTHONPATH")
    }
    env.update(PATH=f"{bindir}{os.pathsep}{env.get('PATH', '')}", PIP_NO_INDEX="1", VIRTUAL_ENV=str(venv))
    here = [p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir()]
    backend = _build_backend(here)
    if backend is None:
        pytest.skip("building the wheel offline needs setuptools>=70.1 in this environment (the dev extra)")
    skipped = []

    for stage in (build, runtime):
        stage_env = dict(env)
        if stage is build:  # the build image's tools: the build backend comes from this environment
            stage_env["PYTHONPATH"] = backend
        cwd = tmp_path
        for instr, rest in stage.steps:
            if instr == "ENV":
                for item in shlex.split(rest):
                    key, _, value = item.partition("=")
                    stage_env[key] = local.text(value)
            elif instr == "WORKDIR":
                cwd = local.path(rest)
                cwd.mkdir(parents=True, exist_ok=True)
            elif instr == "COPY" and not rest.startswith("--from="):
                *sources, dest = rest.split()
                target = local.path(dest) if dest.startswith("/") else cwd / dest
                for src in sources:  # as Docker does: a folder's contents go to dest, a file into dest/
                    origin = ROOT / src
                    if origin.is_dir():
                        shutil.copytree(
                            origin, target, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
                        )
                    else:
                        target.mkdir(parents=True, exist_ok=True)
                        shutil.copy2(origin, target / origin.name)
            elif instr == "RUN":
                if "useradd" in rest:
                    skipped.append(rest)
                    continue
                command = local.text(rest)
                command = command.replace("pip wheel", "pip wheel --no-deps --no-build-isolation")
                command = command.replace("pip install", "pip install --no-deps")
                done = subprocess.run(
                    ["bash", "-c", command], cwd=cwd, env=stage_env, capture_output=True, text=True, timeout=600
                )
                assert done.returncode == 0, f"RUN {rest}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
                if "pip install" in rest:  # from here on the dependencies come from this environment
                    site = next((venv / "lib").glob("python3*/site-packages"))
                    (site / "zz_test_dependencies.pth").write_text("\n".join(here) + "\n", encoding="utf-8")
                    _requirements_are_met(bindir / "python", stage_env)
        if stage is runtime:
            runtime_env, runtime_cwd = stage_env, cwd

    assert len(skipped) == 1  # only the system user
    where = subprocess.run(
        [bindir / "python", "-c", "import bot, knowledge; print(bot.__file__, knowledge.__file__)"],
        cwd=runtime_cwd,
        env=runtime_env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert str(ROOT) not in where.stdout and str(venv) in where.stdout  # the wheel, not the source tree
    _serve_and_check_health(runtime, runtime_env, runtime_cwd)


def _build_backend(dirs: list[str]) -> str | None:
    """The site-packages folder holding a setuptools that builds wheels by itself (>= 70.1)."""
    import importlib.metadata as md

    from packaging.version import Version

    for folder in dirs:
        for dist in md.distributions(path=[folder]):
            if dist.metadata["Name"] == "setuptools" and Version(dist.version) >= Version("70.1"):
                return folder
    return None


def _requirements_are_met(python: Path, env: dict[str, str]) -> None:
    code = (
        "import importlib.metadata as md, sys\n"
        "from packaging.requirements import Requirement\n"
        "dist = md.distribution('gpu-advisor')\n"
        "bad = []\n"
        "for line in dist.requires or []:\n"
        "    req = Requirement(line)\n"
        "    if req.marker and not req.marker.evaluate({'extra': ''}):\n"
        "        continue\n"
        "    try:\n"
        "        version = md.version(req.name)\n"
        "    except md.PackageNotFoundError:\n"
        "        bad.append(f'{req} (missing)'); continue\n"
        "    if not req.specifier.contains(version, prereleases=True):\n"
        "        bad.append(f'{req} (found {version})')\n"
        "print('\\n'.join(bad)); sys.exit(1 if bad else 0)\n"
    )
    done = subprocess.run([python, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"requirements of the wheel not met:\n{done.stdout}{done.stderr[-2000:]}"


def _serve_and_check_health(runtime: Stage, env: dict[str, str], cwd: Path) -> None:
    port = _free_port()
    cmd = json.loads(_one(runtime, "CMD")[-1])
    cmd[cmd.index("--host") + 1] = "127.0.0.1"
    cmd[cmd.index("--port") + 1] = str(port)
    check = _one(runtime, "HEALTHCHECK")[-1]
    probe = json.loads(check[check.index("CMD") + 3 :].strip())
    probe = [arg.replace(":8000/", f":{port}/") for arg in probe]
    log = open(cwd / "serve.log", "w+")  # closed below
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while True:
            if proc.poll() is not None:
                log.seek(0)
                pytest.fail(f"the CMD exited with {proc.returncode}:\n{log.read()[-3000:]}")
            if subprocess.run(probe, cwd=cwd, env=env, capture_output=True, timeout=30).returncode == 0:
                break
            if time.monotonic() > deadline:
                log.seek(0)
                pytest.fail(f"the HEALTHCHECK never passed:\n{log.read()[-3000:]}")
            time.sleep(0.5)
        # the index the image built is the one served: ready at once, nothing rebuilt at start-up
        import httpx

        ready = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=10).json()
        assert ready["status"] == "ready" and ready["index_chunks"] > 0, ready
        log.seek(0)
        assert "was missing or empty" not in log.read()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)
        log.close()
