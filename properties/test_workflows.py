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
    makes = [line.split(">")[0].split("&")[0].replace("nice -n 10 ", "").strip() for line in lines if "make " in line and "echo" not in line]
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
