"""ServerProcess (specdec.adapters.openai.process): a server subprocess is stopped, by its process id,
on every exit path - normal exit, an exception, a failed startup, Ctrl-C and SIGTERM of the process
running a check, and the death of that process.  The server is fixtures/fake_server.py, run as a
process; after each path the server's PID must no longer exist."""

import os
import signal
import subprocess
import sys
import textwrap
import time
import urllib.request
from pathlib import Path

import pytest

from specdec.adapters.openai.process import ServerProcess, ServerStartError, free_port
from specdec.adapters.vllm.server import vllm_server_argv

ROOT = Path(__file__).resolve().parent.parent
ENV = {"PYTHONPATH": str(ROOT)}


def fake_argv(port: int, *extra: str) -> list[str]:
    return [sys.executable, "-m", "fixtures.fake_server", "--port", str(port), *extra]


def gone(pid: int, within: float = 10.0) -> bool:
    """True once ``os.kill(pid, 0)`` raises ProcessLookupError (waiting up to ``within`` s)."""
    deadline = time.monotonic() + within
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


def test_the_server_answers_inside_and_is_gone_after_a_normal_exit():
    port = free_port()
    with ServerProcess(fake_argv(port), port=port, env=ENV) as server:
        pid = server.pid
        with urllib.request.urlopen(server.base_url + "/v1/models", timeout=5) as answer:
            assert answer.status == 200
        assert server.startup_seconds is not None and server.base_url == f"http://127.0.0.1:{port}"
        assert os.getpgid(pid) == pid  # its own process group
    assert gone(pid, within=0)
    assert server.stop() is not None  # idempotent


def test_the_server_is_gone_after_an_exception_in_the_block():
    port = free_port()
    with pytest.raises(RuntimeError, match="planted"):
        with ServerProcess(fake_argv(port), port=port, env=ENV) as server:
            pid = server.pid
            raise RuntimeError("planted")
    assert gone(pid, within=0)


def test_a_server_that_exits_at_startup_is_an_error_with_its_log(tmp_path):
    server = ServerProcess([sys.executable, "-c", "print('no model here'); raise SystemExit(3)"], port=free_port(),
                           log_path=tmp_path / "server.log")
    with pytest.raises(ServerStartError, match=r"exited with status 3(.|\n)*no model here"):
        with server:
            pass
    assert gone(server.pid, within=0)


def test_a_server_that_never_answers_is_stopped_after_the_startup_timeout(tmp_path):
    server = ServerProcess([sys.executable, "-c", "import time; time.sleep(600)"], port=free_port(), startup_timeout=0.5,
                           log_path=tmp_path / "server.log")
    with pytest.raises(ServerStartError, match=r"did not answer 200 within startup_timeout=0.5 s"):
        with server:
            pass
    assert gone(server.pid, within=0)


def test_sigterm_ignored_by_the_server_ends_in_sigkill():
    port = free_port()
    stubborn = ("import signal, sys, runpy; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                f"sys.argv = ['fake', '--port', '{port}']; runpy.run_module('fixtures.fake_server', run_name='__main__')")
    server = ServerProcess([sys.executable, "-c", stubborn], port=port, env=ENV, stop_timeout=0.5)
    with server:
        pid = server.pid
    assert server.process.returncode == -signal.SIGKILL and gone(pid, within=0)


CHILD = textwrap.dedent("""
    import signal
    import sys
    import specdec as sd
    from fixtures.fake_server import MODEL, target_law
    from specdec.adapters.openai.client import OpenAICompletionsDecoder
    from specdec.adapters.openai.process import ServerProcess, free_port

    # Ctrl-C as a terminal delivers it: a shell's background job (a CI runner's, say) starts with SIGINT
    # ignored, and Python then installs no KeyboardInterrupt handler.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    port = free_port()
    with ServerProcess([sys.executable, "-m", "fixtures.fake_server", "--port", str(port), "--delay", "0.02"], port=port) as server:
        print(server.pid, flush=True)
        client = OpenAICompletionsDecoder(server.base_url, MODEL, samples_per_request=16, max_in_flight=2)

        def decoder(prompts, max_new_tokens, seed):
            print("SAMPLING", flush=True)
            return client(prompts, max_new_tokens, seed)

        report = sd.check_decoder(decoder, target_law(), [[1, 2, 0]], length=2, max_new_tokens=2, tv=0.001, seed=1)
        print("VERDICT", report.verdict, flush=True)
    print("LEFT", flush=True)
    """)


def test_ctrl_c_and_sigterm_of_a_running_check_stop_the_server():
    """Two children run a long check against a server they started; one gets SIGINT, the other SIGTERM, mid-check."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    children = {sig: subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                      cwd=ROOT, env=env) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        pids = {sig: int(child.stdout.readline()) for sig, child in children.items()}
        for sig, child in children.items():
            assert child.stdout.readline().strip() == "SAMPLING"  # the check is sampling
            child.send_signal(sig)
        outputs = {sig: child.communicate(timeout=60) for sig, child in children.items()}
    finally:
        for child in children.values():
            if child.poll() is None:
                child.kill()
    for sig, (out, err) in outputs.items():
        assert gone(pids[sig]), (sig, out, err[-2000:])
    interrupted, _ = outputs[signal.SIGINT]
    assert children[signal.SIGINT].returncode == 0 and "VERDICT INTERRUPTED" in interrupted and "LEFT" in interrupted, outputs
    assert children[signal.SIGTERM].returncode == 128 + signal.SIGTERM, outputs[signal.SIGTERM]


def test_the_server_dies_with_a_killed_parent(tmp_path):
    """SIGKILL leaves no handler to run: the server gets SIGTERM from the kernel (PR_SET_PDEATHSIG)."""
    script = textwrap.dedent("""
        import sys, time
        from specdec.adapters.openai.process import ServerProcess, free_port

        port = free_port()
        with ServerProcess([sys.executable, "-m", "fixtures.fake_server", "--port", str(port)], port=port, log_path=sys.argv[1]) as server:
            print(server.pid, flush=True)
            time.sleep(600)
        """)
    child = subprocess.Popen([sys.executable, "-c", script, str(tmp_path / "server.log")], stdout=subprocess.PIPE, text=True, cwd=ROOT,
                             env=dict(os.environ, PYTHONPATH=str(ROOT)))
    try:
        pid = int(child.stdout.readline())
        child.kill()
        child.wait(timeout=10)
        assert gone(pid), f"server {pid} outlived its parent"
    finally:
        if child.poll() is None:
            child.kill()


def test_vllm_argv_and_argument_checks():
    argv = vllm_server_argv("/models/m", 8123, python="py", speculative_config={"method": "ngram", "num_speculative_tokens": 4},
                            served_model_name="m")
    assert argv[:3] == ["py", "-m", "vllm.entrypoints.openai.api_server"]
    for flag in (["--port", "8123"], ["--dtype", "float32"], ["--max-model-len", "512"], ["--served-model-name", "m"],
                 ["--host", "127.0.0.1"], ["--generation-config", "vllm"]):
        assert argv[argv.index(flag[0]) + 1] == flag[1]
    assert "--enforce-eager" in argv and "--no-enable-chunked-prefill" in argv
    assert argv[argv.index("--speculative-config") + 1] == '{"method": "ngram", "num_speculative_tokens": 4}'
    assert "--speculative-config" not in vllm_server_argv("/m", 1)
    with pytest.raises(TypeError, match="argv"):
        ServerProcess("python -m server", port=1)
    with pytest.raises(ValueError, match="port"):
        ServerProcess(["x"], port=70000)
    with pytest.raises(ValueError, match="ready_path"):
        ServerProcess(["x"], port=1, ready_path="v1/models")
    with pytest.raises(ValueError, match="startup_timeout"):
        ServerProcess(["x"], port=1, startup_timeout=0)


class KilledAt:
    """The client, with its server SIGKILLed while call ``call`` is in flight and restarted on the same port."""

    def __init__(self, client, server, call: int) -> None:
        self.client, self.server, self.call, self.calls, self.pids = client, server, call, 0, [server.pid]
        self.restart = None

    def __call__(self, prompts, max_new_tokens, seed):
        self.calls += 1
        if self.calls == self.call:
            import threading

            def restart():
                self.server.restart(kill=True, down=1.0)
                self.pids.append(self.server.pid)

            self.restart = threading.Timer(0.1, restart)
            self.restart.start()
        return self.client(prompts, max_new_tokens, seed)


def test_a_server_killed_mid_check_and_restarted_on_its_port_loses_and_doubles_nothing():
    """SIGKILL of the server process while requests are in flight, a new process on the same port a second
    later: the check retries what was cut (same seeds) and ends with the counts of an undisturbed run (issue 31)."""
    import specdec as sd
    from fixtures.fake_server import MODEL, target_law
    from specdec.adapters.openai.client import OpenAICompletionsDecoder
    from specdec.adapters.openai.retries import RetryPolicy

    settings = sd.RunSettings(n=600, chunk_size=100, seed=8, tv=None, name="fake server process")
    reports, clients = [], []
    for disturbed in (False, True):
        port = free_port()
        with ServerProcess(fake_argv(port, "--delay", "0.3"), port=port, env=ENV) as server:
            client = OpenAICompletionsDecoder(server.base_url, MODEL, samples_per_request=25, max_in_flight=4,
                                              retry=RetryPolicy(budget=60.0, first=0.1, longest=1.0))
            subject = KilledAt(client, server, call=3) if disturbed else client
            reports.append(sd.check_decoder(subject, target_law(), [[1, 2, 0], [3, 3]], length=2, max_new_tokens=2,
                                            settings=settings))
            if disturbed:
                subject.restart.join()
                assert len(subject.pids) == 2 and subject.pids[0] != subject.pids[1] and gone(subject.pids[0])
            clients.append(client)
    whole, killed = reports
    assert killed.verdict == whole.verdict and killed.samples == whole.samples, killed.format()
    assert [(c.statistic, c.pvalue) for c in killed.checks] == [(c.statistic, c.pvalue) for c in whole.checks]
    faults = clients[1].faults
    assert {"ConnectionRefusedError", "RemoteDisconnected", "ConnectionResetError"} & set(faults), faults
    used = [seed for seed, _ in clients[1].answered]
    assert len(used) == len(set(used)) == len(clients[0].answered)
