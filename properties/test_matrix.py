"""The conformance matrix's cells (issue 30): verdicts read from reports, refusals as cells, the table."""

from types import SimpleNamespace

import numpy as np
import pytest

from specdec.adapters.llama_cpp.sampling_map import processors
from specdec.conformance.matrix import Cell, cell_verdict, markdown_table, read_cells, run_cell, write_cells
from specdec.sampling_settings import SamplingSettings, UnsupportedSetting


def report(verdict="PASS", error=None, checks=(), tv=0.2, samples=200, speculation=None):
    return SimpleNamespace(verdict=verdict, error=error, checks=list(checks), reached_tv=tv, samples=samples, speculation=speculation)


def test_an_http_400_is_the_engines_refusal_and_other_errors_stay_errors():
    refused = report("ERROR", {"message": "ServerRequestError: request 1: HTTP 400 Bad Request: 'min_p ... not yet supported'"})
    assert cell_verdict(refused) == ("REFUSED", "by the engine: HTTP 400 Bad Request: 'min_p ... not yet supported'")
    crashed = report("ERROR", {"message": "ServerRequestError: HTTP 500 Internal Server Error\ntraceback"})
    assert cell_verdict(crashed) == ("ERROR", "ServerRequestError: HTTP 500 Internal Server Error")
    failed = report("FAIL", checks=[SimpleNamespace(passed=True), SimpleNamespace(passed=False, location="position 2, prefix [5]", pvalue=1e-9)])
    assert cell_verdict(failed) == ("FAIL", "position 2, prefix [5], p = 1e-09")
    stratum = report("FAIL", checks=[SimpleNamespace(passed=False, location=None, name="position 2: rank (P3)", pvalue=1e-52)])
    assert cell_verdict(stratum) == ("FAIL", "position 2: rank (P3), p = 1e-52")  # a stratum's check says which it is
    assert cell_verdict(report("INCONCLUSIVE")) == ("INCONCLUSIVE", "")


def test_an_in_process_engines_refusal_is_a_refused_cell():
    from specdec.errors import EngineRefusal

    error = EngineRefusal("vLLM 0.32 (ngram)", "The min_p and logit_bias sampling parameters are not yet supported\n with speculative decoding.")
    assert isinstance(error, ValueError)
    refused = report("ERROR", {"message": f"EngineRefusal: {error}"})
    assert cell_verdict(refused) == ("REFUSED", "by the engine: (vLLM 0.32 (ngram)): The min_p and logit_bias sampling parameters are "
                                                "not yet supported with speculative decoding.")


def test_a_cell_runs_the_check_on_the_built_pair_or_records_the_adapters_refusal():
    seen = {}

    def build(settings):
        if settings.min_p:
            raise UnsupportedSetting("engine E", "min_p", settings.min_p, "it has none")
        return "subject", "reference"

    def check(subject, reference, **kwargs):
        seen.update(kwargs, pair=(subject, reference))
        return report(speculation={"drafts": 5, "draft_tokens": 20, "accepted_tokens": 7})

    cell = run_cell("E", "lookup", "base", SamplingSettings(temperature=0.7), build, check, n=100)
    assert (cell.verdict, cell.samples, cell.drafts, cell.accepted_tokens, cell.settings) == ("PASS", 100, 5, 7, "T=0.7")
    assert seen == {"n": 100, "pair": ("subject", "reference")}
    refused = run_cell("E", "lookup", "min-p", SamplingSettings(min_p=0.1), build, check)
    assert refused.verdict == "REFUSED" and "engine E does not take min_p=0.1" in refused.detail and refused.samples == 0


def test_cells_round_trip_through_json_and_make_one_table(tmp_path):
    cells = [Cell("E", "lookup", "base", "T=0.7", "PASS", 0.21, 800, 1409, 5636, 700, 154.2),
             Cell("E", "lookup", "min-p", "T=0.7 min_p=0.2", "REFUSED", detail="by the engine: a | b")]
    write_cells(cells, tmp_path / "e.json", {"engine": "E"})
    header, back = read_cells(tmp_path / "e.json")
    assert header == {"engine": "E"} and back == cells
    table = markdown_table(back).splitlines()
    assert len(table) == 4 and table[2].startswith("| E | lookup | base | `T=0.7` | **PASS** | 0.210 | 800 | 1,409 (5,636, 700) | 154 s |")
    assert "a / b" in table[3]  # a | in a detail does not break the table


def test_llama_cpps_processor_stages_do_what_the_record_says():
    s = SamplingSettings(logit_bias={1: 2.0}, allowed_token_ids=[0, 1, 3], bad_words=[[2, 3]], stop_token_ids=[0], min_new_tokens=2)
    stages = processors(s, prompt_length=2)
    logits = np.zeros(5, dtype=np.float32)
    for stage in stages:
        logits = stage(np.array([4, 2]), logits)  # history = the prompt: no new token yet, and it ends with 2
    assert logits.tolist() == [-np.inf, 2.0, -np.inf, -np.inf, -np.inf]  # 0 too early, 3 a bad word after 2, 2 and 4 not allowed
    later = np.zeros(5, dtype=np.float32)
    for stage in stages:
        later = stage(np.array([4, 2, 1, 1]), later)
    assert later.tolist() == [0.0, 2.0, -np.inf, 0.0, -np.inf]
    assert processors(SamplingSettings(), 3) is None


def test_a_later_run_replaces_its_cells_and_keeps_the_others():
    from specdec.conformance.matrix import merge_cells

    a, b, c = (Cell("E", "m", name, "T=1", "PASS") for name in "abc")
    b2, d = Cell("E", "m", "b", "T=1", "FAIL"), Cell("E", "m", "d", "T=1", "PASS")
    assert merge_cells([a, b, c], [d, b2]) == [a, b2, c, d]


def test_a_subject_amid_load_answers_as_alone_while_the_load_runs_beside_it():
    import threading
    import time

    from specdec.adapters.background_load import AmidLoad, Load

    during = threading.Event()
    calls = []

    def subject(prompts, max_new_tokens, seed):
        time.sleep(0.2)  # the load gets going meanwhile
        return [[seed % 7] * max_new_tokens for _ in prompts]

    def load(prompts, max_new_tokens, seed):
        calls.append((len(prompts), max_new_tokens))
        during.set()
        time.sleep(0.01)
        return [[0]] * len(prompts)

    def broken(prompts, max_new_tokens, seed):
        raise RuntimeError("HTTP 500")

    amid = AmidLoad(subject, [Load(load, [[1, 2]] * 3, 4), Load(broken, [[3]])])
    assert amid([[1], [2]], 2, 10) == subject([[1], [2]], 2, 10)
    assert during.is_set() and amid.load_calls >= 1 and calls[0] == (3, 4)
    assert amid.load_failures >= 1 and amid.first_load_failure == "RuntimeError: HTTP 500"
    settled = amid.load_calls
    time.sleep(0.05)
    assert amid.load_calls == settled  # the load stops with the call
    assert amid.speculation_counts() is None
    with pytest.raises(TypeError, match="load must be"):
        AmidLoad(subject, [])


def test_greedy_cells_compare_outputs_row_by_row():
    from specdec.conformance.greedy_equality import compare_greedy

    def same(prompts, max_new_tokens, seed):
        return [[len(p) % 5] * max_new_tokens for p in prompts]

    class Counting:
        def __init__(self, flip_row=None):
            self.flip_row, self.calls = flip_row, 0

        def __call__(self, prompts, max_new_tokens, seed):
            rows = same(prompts, max_new_tokens, seed)
            if self.flip_row is not None:
                rows[self.flip_row] = rows[self.flip_row][:1] + [4] * (max_new_tokens - 1)
            return rows

        def speculation_counts(self):
            self.calls += 1
            return {"drafts": 3 * self.calls, "draft_tokens": 12 * self.calls, "accepted_tokens": self.calls}

    passed = compare_greedy(Counting(), same, [[1, 2], [3]], length=3, rows=4, n=800, tv=None)
    assert (passed.verdict, passed.samples, passed.speculation) == ("PASS", 16, {"drafts": 3, "draft_tokens": 12, "accepted_tokens": 1})
    assert passed.detail == "equal on 8 rows (2 distinct output(s))" and cell_verdict(passed) == ("PASS", passed.detail)
    failed = compare_greedy(Counting(flip_row=5), same, [[1, 2], [3]], length=3, rows=4)
    assert failed.verdict == "FAIL" and failed.detail.startswith("row 5 (prompt 1) differs at position 2: [1, 4, 4] with speculation")

    def refusing(prompts, max_new_tokens, seed):
        raise RuntimeError("request 1: HTTP 400 Bad Request: n must be 1 when using greedy sampling")

    refused = compare_greedy(refusing, same, [[1]], length=2)
    assert cell_verdict(refused)[0] == "REFUSED" and '"kind": "greedy equality"' in refused.to_json()


def test_a_stopped_matrix_run_resumes_at_the_next_unfinished_cell(tmp_path):
    from scripts.matrix import runner

    plan = [("lookup", name) for name in ("base", "min-p", "bias")]
    ran, stop = [], [True]

    class Stopped(Exception):
        pass

    def cell_of(number, method, name, budget):
        ran.append((number, name))
        if name == "bias" and stop.pop():
            raise Stopped  # the first run stops in its second cell
        return Cell("E", labels[method], name, "T=1", "PASS", 0.1, 10)  # cells carry the table's label, not the plan's key

    labels = {"lookup": "prompt lookup K=4"}
    with pytest.raises(Stopped):
        runner.run(plan[:1] + plan[2:], cell_of, file="e.json", engine="transformers", n=10, append=False, seconds_per_cell=1,
                   out=tmp_path, label=labels.get)
    assert [c.setting for c in read_cells(tmp_path / "e.json")[1]] == ["base"]
    ran.clear()
    stop.append(False)
    runner.run(plan, cell_of, file="e.json", engine="transformers", n=10, append=False, seconds_per_cell=1, out=tmp_path,
               resume=True, label=labels.get)
    assert ran == [(2, "min-p"), (3, "bias")]  # numbered as in the whole plan: the seeds of an uninterrupted run
    header, cells = read_cells(tmp_path / "e.json")
    assert [c.setting for c in cells] == ["base", "min-p", "bias"] and len(header["runs"]) == 2


def test_two_drivers_on_one_cells_file_keep_each_others_cells(tmp_path):
    from scripts.matrix import runner

    path = tmp_path / "e.json"
    write_cells([Cell("E", "lookup", "old", "T=1", "PASS", 0.1, 10, extra={"run": 0})], path,
                {"engine": "transformers", "runs": [{"date": "earlier", "samples_per_side": 1}]})

    def second_driver():  # starts after the first read the file and finishes before the first writes
        runner.run([("b", "top-k"), ("b", "base")], lambda number, method, name, budget: Cell("E", method, name, "T=1", "PASS", 0.2, 20),
                   file="e.json", engine="transformers", n=20, append=True, seconds_per_cell=1, out=tmp_path, label=str)

    def first(number, method, name, budget):
        if number == 1:
            second_driver()
        return Cell("E", method, name, "T=1", "PASS", 0.3, 30)

    runner.run([("a", "top-k"), ("a", "base")], first, file="e.json", engine="transformers", n=30, append=True, seconds_per_cell=1,
               out=tmp_path, label=str)
    header, cells = read_cells(path)
    assert [(c.method, c.setting, c.extra["run"]) for c in cells] == [
        ("lookup", "old", 0), ("b", "top-k", 1), ("b", "base", 1), ("a", "top-k", 2), ("a", "base", 2)]
    assert [run["samples_per_side"] for run in header["runs"]] == [1, 20, 30]  # each cell names the run that made it


def test_a_driver_writes_its_cells_only_while_it_holds_the_files_lock(tmp_path):
    import threading

    from scripts.matrix import runner

    path, this_run = tmp_path / "e.json", {"engine": "transformers", "date": "today", "samples_per_side": 5}
    cell = Cell("E", "lookup", "base", "T=1", "PASS", 0.1, 10)
    writer = threading.Thread(target=runner.write_merged, args=(path, this_run, [cell]), kwargs={"keep": True, "run_index": None})
    with runner.locked(path):  # another driver, reading and merging
        writer.start()
        writer.join(timeout=0.5)
        assert writer.is_alive() and not path.exists()  # it waits for the lock
    writer.join(timeout=30)
    assert not writer.is_alive() and [c.setting for c in read_cells(path)[1]] == ["base"]


def test_per_token_cells_make_their_own_table_with_the_control_and_the_oracle_floor():
    from specdec.conformance.token_cells import token_table

    cell = Cell("E", "lookup", "penalty", "T=1 presence=1.5", "PASS", 0.03, 1200, 300, 1200, 800, 61.0, "",
                {"kind": "per token", "control_verdict": "PASS", "control_reached_tv": 0.029, "token_verdict": "PASS",
                 "token_reached_tv": 0.03, "tokens": 38400, "drafted_tokens": None, "ab_verdict": "PASS", "ab_reached_tv": 0.4,
                 "ab_samples": 400, "oracle_floor": 0.005})
    control_fail = Cell("E", "lookup", "bias", "T=1 bias", "CONTROL FAIL", 0.05, 0, detail="the oracle does not match",
                        extra={"kind": "per token", "control_verdict": "FAIL", "control_reached_tv": 0.05, "oracle_floor": 0.005})
    head, rule, first, second = token_table([cell, control_fail]).splitlines()
    assert head.count("|") == rule.count("|") == first.count("|") == second.count("|")
    assert "PASS (0.029)" in first and "38,400" in first and "PASS (0.400, 400)" in first and "0.005" in first
    assert "**CONTROL FAIL**" in second and "FAIL (0.050)" in second


def test_the_per_token_driver_shares_a_settings_control_between_methods_and_closes_what_it_built(tmp_path, monkeypatch):
    from scripts.matrix import token_driver

    calls, closed, asked = [], [], []

    class Made:
        def __init__(self, label):
            self.label = label

        def close(self):
            closed.append(self.label)

    def fake_cell(engine, method, setting, settings, build, oracle_of, *, keep, control_report, seed, **kwargs):
        build(settings), oracle_of(settings)
        calls.append((method, setting, control_report, seed))
        asked.append((kwargs["prompts"], kwargs["length"]))
        if control_report is None:
            keep("control", f"control of {setting}")
        return Cell(engine, method, setting, settings.label, "PASS", 0.1, 10)

    monkeypatch.setattr(token_driver, "run_token_cell", fake_cell)
    monkeypatch.setattr(token_driver.runner, "keeper", lambda *names: lambda report: None)
    settings = {"base": SamplingSettings(temperature=0.7), "greedy": SamplingSettings(temperature=0.0),
                "penalty": SamplingSettings(temperature=0.7, repetition_penalty=1.3)}
    matrix = token_driver.TokenMatrix("doc", "E 1.0", "transformers", {"a": "method a", "b": "method b"}, settings, "e.json",
                                      seconds_per_cell=1, seed_base=100, prompts=lambda: ((1, 2, 3), (4, 5)), length=5)
    token_driver.run_matrix(matrix, lambda method, s: (Made(f"{method} subject"), Made(f"{method} plain")),
                            lambda s: Made("oracle"), ["--method", "a", "b", "--tv", "0.1", "--out", str(tmp_path)])
    # setting by setting, both methods; greedy is not a per-token cell; the second method reuses the first's control
    assert [(m, s, c) for m, s, c, _ in calls] == [("method a", "base", None), ("method b", "base", "control of base"),
                                                    ("method a", "penalty", None), ("method b", "penalty", "control of penalty")]
    assert [seed for *_, seed in calls] == [110, 120, 130, 140]
    assert asked == [([[1, 2, 3], [4, 5]], 5)] * 4  # the matrix's own prompts and length (a driver's tiny vocabulary)
    assert closed.count("oracle") == 4 and closed.count("a subject") == 2 and closed.count("b plain") == 2
    assert [c.setting for c in read_cells(tmp_path / "e.json")[1]] == ["base", "base", "penalty", "penalty"]


def test_a_per_token_cell_keeps_checkpoints_a_resumed_run_continues_and_an_interrupted_cell_is_not_written(tmp_path, monkeypatch):
    """Each cell's checks keep their counts in the cell's own folder; ``--resume`` hands the folder on as it is, a run
    without it starts the cell afresh; a cell Ctrl-C'd ends the run and is not a cell of the file."""
    from scripts.matrix import token_driver

    monkeypatch.setattr(token_driver.runner, "OUT", tmp_path / "out")
    handed, verdicts = [], iter(["INTERRUPTED", "PASS", "PASS", "PASS"])

    def fake_cell(engine, method, setting, settings, build, oracle_of, *, keep, control_report, seed, checkpoints, **kwargs):
        handed.append((setting, checkpoints, sorted(p.name for p in checkpoints.glob("*"))))
        checkpoints.mkdir(parents=True, exist_ok=True)
        (checkpoints / "tokens.json").write_text("{}")  # what a check leaves
        return Cell(engine, method, setting, settings.label, next(verdicts), 0.1, 10)

    monkeypatch.setattr(token_driver, "run_token_cell", fake_cell)
    settings = {"base": SamplingSettings(temperature=0.7), "penalty": SamplingSettings(temperature=0.7, repetition_penalty=1.3)}
    matrix = token_driver.TokenMatrix("doc", "E 1.0", "transformers", {"a": "method a"}, settings, "e.json",
                                      seconds_per_cell=1, prompts=lambda: ((1, 2, 3),))
    run = lambda *extra: token_driver.run_matrix(matrix, lambda method, s: (object(), object()), lambda s: object(),  # noqa: E731
                                                 ["--tv", "0.05", "--out", str(tmp_path), *extra])
    run()
    folder = tmp_path / "out" / "checkpoints" / "e" / "tv0.05" / "a-base"
    assert handed == [("base", folder, [])]  # interrupted at its first cell: the run stopped there
    assert not (tmp_path / "e.json").exists()  # and wrote nothing
    run("--resume")
    assert handed[1:] == [("base", folder, ["tokens.json"]), ("penalty", folder.with_name("a-penalty"), [])]
    assert [c.setting for c in read_cells(tmp_path / "e.json")[1]] == ["base", "penalty"]
    run("--append", "--only", "base")
    assert handed[3:] == [("base", folder, [])]  # without --resume: a fresh cell, the old counts removed
    assert token_driver.checkpoint_folder(matrix, 0.03, "draft_model", "top-k") == tmp_path / "out/checkpoints/e/tv0.03/draft_model-top_k"


def test_a_resumed_per_token_run_takes_the_controls_earlier_runs_passed_of_the_same_versions(tmp_path, monkeypatch):
    from scripts.matrix import token_driver
    from scripts.matrix.header import header
    from specdec.conformance.token_cells import StoredControl

    calls = []

    def fake_cell(engine, method, setting, settings, build, oracle_of, *, keep, control_report, seed, **kwargs):
        calls.append((method, setting, control_report))
        return Cell(engine, method, setting, settings.label, "PASS", 0.1, 10)

    monkeypatch.setattr(token_driver, "run_token_cell", fake_cell)
    settings = {"base": SamplingSettings(temperature=0.7), "penalty": SamplingSettings(temperature=0.7, repetition_penalty=1.3),
                "bias": SamplingSettings(temperature=0.7, logit_bias={1: 1.0})}
    matrix = token_driver.TokenMatrix("doc", "E 1.0", "transformers", {"a": "method a", "b": "method b"}, settings, "e.json",
                                      seconds_per_cell=1, prompts=lambda: ((1, 2, 3),))

    def earlier(setting, control, *, tv=0.1):
        return Cell("E 1.0", "method a", setting, settings[setting].label, "PASS", tv, 10,
                    extra={"kind": "per token", "control_verdict": control, "control_shared": False, "control_reached_tv": tv,
                           "control_tokens": 3000, "asked_tv": tv, "run": 0})

    def run_b(versions):
        calls.clear()
        head = {**header("transformers", None, 0.1), "versions": versions,
                "runs": [{"date": "2026-11-20", "commit": "abcdef1234567890"}]}
        write_cells([earlier("base", "PASS"), earlier("penalty", "FAIL"), earlier("bias", "PASS", tv=0.2)], tmp_path / "e.json", head)
        token_driver.run_matrix(matrix, lambda method, s: (object(), object()), lambda s: object(),
                                ["--method", "b", "--tv", "0.1", "--out", str(tmp_path), "--resume"])
        return {setting: control for _, setting, control in calls}

    same = run_b(header("transformers", None, 0.1)["versions"])
    # only the PASSed control at this TV is taken; a FAILed one and one of another TV are run again
    assert same == {"base": StoredControl("PASS", 0.1, 3000, "the run of 2026-11-20 (commit abcdef123456)"),
                    "penalty": None, "bias": None}
    assert run_b({**header("transformers", None, 0.1)["versions"], "transformers": "0.0.1"}) == {
        "base": None, "penalty": None, "bias": None}  # another version of the engine: every control is run again
    cells = read_cells(tmp_path / "e.json")[1]
    assert {(c.method, c.setting) for c in cells} >= {("method a", "base"), ("method b", "base")}


def test_a_matrix_takes_the_controls_of_the_files_that_share_its_engine_without_speculation(tmp_path, monkeypatch):
    """vLLM's in-process matrix is controlled by the server matrix's plain server: its ``control_files`` are read in
    every run (no --resume needed), its own file's controls only when resumed, and the source names the file."""
    from scripts.matrix import token_driver
    from scripts.matrix.header import header
    from specdec.conformance.token_cells import StoredControl

    calls = []

    def fake_cell(engine, method, setting, settings, build, oracle_of, *, keep, control_report, seed, **kwargs):
        calls.append((setting, control_report))
        return Cell(engine, method, setting, settings.label, "PASS", 0.1, 10)

    monkeypatch.setattr(token_driver, "run_token_cell", fake_cell)
    settings = {"base": SamplingSettings(temperature=0.7), "penalty": SamplingSettings(temperature=0.7, repetition_penalty=1.3)}
    head = {**header("transformers", None, 0.1), "runs": [{"date": "2026-11-28", "commit": "0123456789abcdef"}]}
    extra = {"kind": "per token", "control_verdict": "PASS", "control_shared": False, "control_reached_tv": 0.1,
             "control_tokens": 5000, "asked_tv": 0.1, "run": 0}
    write_cells([Cell("Server 1.0", "method s", "base", settings["base"].label, "PASS", 0.1, 10, extra=extra)],
                tmp_path / "server.json", head)
    matrix = token_driver.TokenMatrix("doc", "E 1.0", "transformers", {"a": "method a"}, settings, "engine.json",
                                      seconds_per_cell=1, prompts=lambda: ((1, 2, 3),), control_files=("server.json",))
    token_driver.run_matrix(matrix, lambda method, s: (object(), object()), lambda s: object(),
                            ["--method", "a", "--tv", "0.1", "--out", str(tmp_path)])
    assert calls == [("base", StoredControl("PASS", 0.1, 5000, "server.json, the run of 2026-11-28 (commit 0123456789ab)")),
                     ("penalty", None)]  # a setting the other file has no control of runs its own
    calls.clear()
    token_driver.run_matrix(matrix, lambda method, s: (object(), object()), lambda s: object(),
                            ["--method", "a", "--tv", "0.2", "--out", str(tmp_path)])
    assert calls == [("base", None), ("penalty", None)]  # another TV: the stored control does not apply


def test_the_transformers_per_token_driver_asks_the_workloads_prompts_in_its_tiny_vocabulary():
    from scripts.matrix import transformers_tokens
    from scripts.matrix.token_prompts import token_prompts

    prompts, workload = transformers_tokens.tiny_prompts(), token_prompts()
    assert len(prompts) == len(workload) and prompts[-1] == tuple(transformers_tokens.PROMPT)
    for tiny, real in zip(prompts[:-1], workload[:-1]):
        assert len(tiny) == len(real) and all(0 <= t < transformers_tokens.VOCAB for t in tiny)
        # equal ids stay equal: a repeated phrase of the real prompt is a repeat of the tiny one
        assert all(tiny[i] == tiny[j] for i in range(len(real)) for j in range(i) if real[i] == real[j])
    assert transformers_tokens.MATRIX.prompts is transformers_tokens.tiny_prompts


def test_a_server_matrix_starts_the_plain_server_only_for_a_control_it_runs(tmp_path, monkeypatch):
    """``run_with_servers``: the speculating servers start before the first cell; the plain one at the first request
    of a control (a stored control, or a subject refused before its control, never starts it); all are stopped."""
    from scripts.matrix import token_driver

    events = []

    class FakeServer:
        def __init__(self, name):
            self.name = name
            events.append(("start", name))

        def wait_ready(self):
            events.append(("ready", self.name))

        def stop(self, keep_log):
            events.append(("stop", self.name))

    def client_of(server, name, settings):
        return lambda prompts, max_new_tokens, seed: events.append(("ask", name)) or [[1] * max_new_tokens for _ in prompts]

    def fake_cell(engine, method, setting, settings, build, oracle_of, *, keep, control_report, seed, **kwargs):
        subject, reference = build(settings)
        if setting != "refused":
            subject([[1]], 2, seed)
            if control_report is None:
                reference([[1]], 2, seed)
        return Cell(engine, method, setting, settings.label, "PASS", 0.1, 10)

    monkeypatch.setattr(token_driver, "run_token_cell", fake_cell)
    settings = {"stored": SamplingSettings(temperature=0.7), "refused": SamplingSettings(temperature=0.8),
                "fresh": SamplingSettings(temperature=0.9)}
    matrix = token_driver.TokenMatrix("doc", "E 1.0", "transformers", {"a": "method a"}, settings, "e.json",
                                      seconds_per_cell=1, prompts=lambda: ((1, 2, 3),))
    monkeypatch.setattr(token_driver, "known_controls", lambda matrix, args: {"stored": "a stored control"})
    watched = []
    token_driver.run_with_servers(matrix, FakeServer, client_of, lambda s: object(),
                                  ["--method", "a", "--tv", "0.1", "--only", "stored", "refused", "--out", str(tmp_path)],
                                  watch=lambda servers, method: lambda cell: watched.append(cell.setting) or cell)
    assert events == [("start", "a"), ("ready", "a"), ("ask", "a"), ("stop", "a")]  # no plain server at all
    assert watched == ["stored", "refused"]
    events.clear()
    token_driver.run_with_servers(matrix, FakeServer, client_of, lambda s: object(),
                                  ["--method", "a", "--tv", "0.1", "--only", "stored", "fresh", "--out", str(tmp_path)])
    assert events == [("start", "a"), ("ready", "a"), ("ask", "a"), ("ask", "a"), ("start", "plain"), ("ready", "plain"),
                      ("ask", "plain"), ("stop", "a"), ("stop", "plain")]


def test_a_cells_summary_names_its_control_tokens_drafts_and_detail():
    cell = Cell("engine", "n-gram", "base", "T=1", "PASS", reached_tv=0.03, drafts=5, draft_tokens=20, accepted_tokens=7,
                seconds=12.4, detail="d", extra={"control_verdict": "PASS", "control_reached_tv": 0.029, "tokens": 3000})
    assert cell.summary() == "PASS, control PASS at 0.029, 3000 tokens at 0.03, drafts 5 (20, 7), 12 s; d"
    assert Cell("e", "m", "s", "T=1", "REFUSED", detail="by the engine").summary().startswith("REFUSED, 0 tokens at None")
