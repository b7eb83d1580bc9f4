"""The GitHub Actions workflows users copy (actionlint does not install here, so the YAML is checked):
the CPU job runs the README's test command, the GPU job the gpu tests, the GPU benchmarks and the
benchmark history comparison, with commands that exist in the project's environment."""

import shlex
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent


def workflow(name: str) -> dict:
    data = yaml.safe_load((ROOT / ".github" / "workflows" / name).read_text())
    data["on"] = data.get("on", data.pop(True, None))  # YAML 1.1 reads the key `on` as True
    assert data["on"], f"{name} has no trigger"
    return data


def commands(job: dict) -> list[str]:
    return [step["run"] for step in job["steps"] if "run" in step]


def test_cpu_job_runs_the_readme_test_command_on_python_311():
    job = workflow("ci.yml")["jobs"]["cpu"]
    assert job["runs-on"] == "ubuntu-latest"
    setup = [s for s in job["steps"] if s.get("uses", "").startswith("actions/setup-python@")]
    assert setup and setup[0]["with"]["python-version"] == "3.11"
    assert commands(job) == ["make test", "make peers"]
    readme = (ROOT / "README.md").read_text()
    assert "make test     # the whole test suite" in readme
    # .ci/run: the README's test command, then make peers; the peers environments pip installs may be built in the
    # background meanwhile, but make peers starts only after they are waited for
    # (its `stamp` lines only print the time and the CPU)
    lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()
             if line.strip() and not line.lstrip().startswith(("#", "stamp "))]
    makes = [line.split(">")[0].split("&")[0].replace("nice -n 10 ", "").replace('-j"$jobs" ', "").strip()
             for line in lines if "make " in line and "echo" not in line]
    assert makes == ["make peers-envs", "make test", "make peers"], makes
    assert lines[-1] == "make peers" and lines.index("make test") < next(i for i, line in enumerate(lines) if "wait " in line)


def test_gpu_job_runs_gpu_tests_benchmarks_and_history_on_a_self_hosted_gpu_runner():
    job = workflow("gpu.yml")["jobs"]["gpu"]
    assert set(job["runs-on"]) == {"self-hosted", "gpu"}
    runs = commands(job)
    assert runs[0] == "make install TORCH_SPEC= TRITON_SPEC="  # the runner brings its own CUDA torch
    assert any("-m gpu" in r for r in runs)
    bench = [r for r in runs if shlex.split(r)[3:4] == ["perf"]]
    assert bench and "--benchmark-autosave" in bench[0] and "--bench-device cuda" in bench[0] and "--benchmark-enable" in bench[0]
    assert any(shlex.split(r)[:3] == [".venv/bin/specdec", "bench", "gate"] for r in runs)  # the ratio gate over the history
    checkout = job["steps"][0]
    assert checkout["uses"].startswith("actions/checkout@") and checkout["with"]["clean"] is False  # history kept


@pytest.mark.parametrize("name", ["ci.yml", "gpu.yml"])
def test_every_tool_a_workflow_calls_exists_in_the_environment(name):
    bindir = Path(sys.executable).parent
    for job in workflow(name)["jobs"].values():
        for run in commands(job):
            tool = shlex.split(run)[0]
            if tool.startswith(".venv/bin/"):
                assert (bindir / Path(tool).name).exists(), f"{name}: {tool} is not installed by make install"
            else:
                assert tool == "make", f"{name}: unexpected command {run!r}"


def _recipe(makefile: str, target: str) -> list[str]:
    """The recipe lines of ``target`` (continuation lines joined)."""
    inside, recipe = False, []
    for line in makefile.splitlines():
        if inside:
            if not line.startswith("\t"):
                break
            recipe.append(line.strip())
        elif line.startswith(f"{target}:"):
            inside = True
    return " ".join(r.rstrip("\\") if r.endswith("\\") else r + "\n" for r in recipe).splitlines()


def _pytest_runs(makefile: str, target: str) -> int:
    """pytest processes that `make target` starts: its own, and those of the targets its recipe makes."""
    runs = 0
    for line in _recipe(makefile, target):
        runs += line.count("-m pytest ")
        if "$(MAKE)" in line:
            for called in line.split("--no-print-directory", 1)[1].split(">")[0].split("&")[0].split():
                runs += _pytest_runs(makefile, called)
    return runs


def test_a_correct_implementation_fails_ci_at_most_once_in_a_million():
    """CI's runs share 1e-6 by the union bound: make test's --specdec-alpha (pyproject) plus PEERS_ALPHA for every
    pytest run `make peers` starts (one per engine's slice)."""
    import re
    import tomllib

    addopts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["addopts"]
    main = float(re.search(r"--specdec-alpha (\S+)", addopts).group(1))
    makefile = (ROOT / "Makefile").read_text()
    peers_alpha = float(re.search(r"^PEERS_ALPHA \?= (\S+)", makefile, re.M).group(1))
    runs = _pytest_runs(makefile, "peers")
    assert runs == 6, runs  # vLLM, llama.cpp, OpenVINO GenAI, ONNX Runtime GenAI, mistral.rs, node-llama-cpp
    assert all("--specdec-alpha $(PEERS_ALPHA)" in line for t in ("peers", "peers-engines") for line in _recipe(makefile, t)
               if "-m pytest " in line)
    total = main + runs * peers_alpha
    assert total < 1e-6, f"make test {main:g} + {runs} peers runs x {peers_alpha:g} = {total:g}"
