"""Prompts as a user gives them (``specdec check --prompt / --prompts-file / --chat / --tokenizer``, or none: the
embedded workload): tokenised by the server's own ``/tokenize`` (the fake server's toy tokenizer) or by a tokenizer
folder (a tiny word-level one made here), every bad input refused in one line (exit 2) before any sampling, and the
prompts kept in the JSON report as text and token ids, so a resumed run tokenises to the same ids."""

import json

import pytest

from fixtures import fake_server
from fixtures.fake_server import FakeServer, chat_tokenize, tokenize
from specdec.adapters.openai import tokenize as tokenize_module
from specdec.adapters.openai.tokenize import server_tokenize
from specdec.cli import build_parser, main
from specdec.cli.check import _validate
from specdec.errors import ServerRequestError
from specdec.workload.prompt_inputs import DEFAULT_KINDS, PromptInput, default_inputs, read_jsonl
from specdec.workload.texts import PROMPTS

WORDS = ["[UNK]", "hello", "world", "user", "assistant", ":"]  # ids 0..5: within the fake server's V = 6
TEMPLATE = "{% for m in messages %}{{ m['role'] }} : {{ m['content'] }} {% endfor %}{% if add_generation_prompt %}assistant :{% endif %}"


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory):
    """A word-level tokenizer folder of six tokens with a chat template (offline, made here)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    raw = Tokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="[UNK]"))
    raw.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    folder = tmp_path_factory.mktemp("tokenizer")
    PreTrainedTokenizerFast(tokenizer_object=raw, unk_token="[UNK]", chat_template=TEMPLATE).save_pretrained(folder)
    return str(folder)


def _args(argv: list[str]):
    args = build_parser().parse_args(["check", *argv, "--json", "/dev/null"])
    _validate(args)
    return args


def _refused(capsys, argv: list[str]) -> str:
    assert main(["check", *argv, "--json", "/dev/null"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


# -- the JSONL file --------------------------------------------------------------------------------------------------

def test_a_prompts_file_gives_text_messages_and_ids_and_skips_blank_lines(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text('{"prompt": "hello world"}\n\n{"messages": [{"role": "user", "content": "hi"}]}\n{"prompt_ids": [1, 2, 3]}\n')
    first, second, third = read_jsonl(path)
    assert (first.form, first.text, first.origin) == ("text", "hello world", f"{path}:1")
    assert (second.form, second.messages, second.origin) == ("messages", ({"role": "user", "content": "hi"},), f"{path}:3")
    assert (third.form, third.token_ids, third.origin) == ("token_ids", (1, 2, 3), f"{path}:4")


@pytest.mark.parametrize("line, says", [
    ('{"prompt": "a"', ":2: not JSON"),
    ('["a"]', ":2: a line is a JSON object"),
    ('{"promt": "a"}', ":2: unknown field(s) ['promt']"),
    ('{"prompt": "a", "prompt_ids": [1]}', ":2: a line has exactly one of ['prompt', 'messages', 'prompt_ids'], got ['prompt', 'prompt_ids']"),
    ('{}', ":2: a line has exactly one of"),
    ('{"prompt": ""}', ":2: field 'prompt' must be a non-empty string"),
    ('{"prompt": 3}', ":2: field 'prompt' must be a non-empty string, got 3"),
    ('{"prompt_ids": [1, -2]}', ":2: field 'prompt_ids' must be a non-empty list of non-negative integers, got [1, -2]"),
    ('{"prompt_ids": [true]}', ":2: field 'prompt_ids' must be"),
    ('{"prompt_ids": []}', ":2: field 'prompt_ids' must be"),
    ('{"messages": []}', ":2: field 'messages' must be a non-empty list"),
    ('{"messages": [{"role": "user"}]}', ":2: field 'messages[0]' must be an object with string 'role' and 'content'"),
    ('{"messages": [{"role": "user", "content": "a", "name": "x"}]}', ":2: field 'messages[0]'"),
])
def test_a_bad_line_is_refused_naming_the_file_the_line_and_the_field(tmp_path, capsys, line, says):
    path = tmp_path / "p.jsonl"
    path.write_text('{"prompt": "ok"}\n' + line + "\n")
    with pytest.raises(ValueError) as error:
        read_jsonl(path)
    assert str(error.value).startswith(str(path)) and says in str(error.value)
    with FakeServer() as server:  # the CLI: one line, the option named, before the server is asked anything
        err = _refused(capsys, ["--server", server.base_url, "--model", "fake", "--reference-server", server.base_url,
                                "--prompts-file", str(path)])
        assert server.requests == 0
    assert f"--prompts-file {path}" in err and says in err


def test_an_empty_or_missing_prompts_file_is_refused(tmp_path, capsys):
    (tmp_path / "empty.jsonl").write_text("\n  \n")
    for name, says in (("empty.jsonl", "no prompts"), ("missing.jsonl", "cannot read it")):
        err = _refused(capsys, ["--server", "http://127.0.0.1:9", "--model", "m", "--reference-server", "http://127.0.0.1:9",
                                "--prompts-file", str(tmp_path / name)])
        assert says in err and name in err


def test_a_prompt_input_has_exactly_one_form():
    with pytest.raises(ValueError, match="exactly one of text, messages, token_ids"):
        PromptInput(origin="x", text="a", token_ids=(1,))


# -- the server's /tokenize ------------------------------------------------------------------------------------------

def test_the_server_tokenises_text_and_chat_messages():
    messages = [{"role": "user", "content": "hello"}]
    with FakeServer() as server:
        assert server_tokenize(server.base_url + "/v1/", "fake", text="hello world") == tokenize("hello world")
        assert server_tokenize(server.base_url, "fake", messages=messages) == chat_tokenize(messages)


def test_each_dialect_posts_its_servers_own_form(monkeypatch):
    posted = []

    def post(url, payload, timeout, what):
        posted.append((url, payload))
        return 200, b'{"tokens": [7, 8]}'

    monkeypatch.setattr(tokenize_module, "post_json", post)
    assert server_tokenize("http://h:1", "m", text="a") == [7, 8]
    assert server_tokenize("http://h:1", "m", messages=[{"role": "user", "content": "a"}]) == [7, 8]
    assert server_tokenize("http://h:1", text="a", dialect="llama-server") == [7, 8]
    assert posted == [("http://h:1/tokenize", {"model": "m", "prompt": "a", "add_special_tokens": True}),
                      ("http://h:1/tokenize", {"model": "m", "messages": [{"role": "user", "content": "a"}], "add_generation_prompt": True}),
                      ("http://h:1/tokenize", {"content": "a", "add_special": True, "parse_special": True})]
    with pytest.raises(ValueError, match="llama-server's /tokenize takes text only"):
        server_tokenize("http://h:1", messages=[{"role": "user", "content": "a"}], dialect="llama-server")
    with pytest.raises(ValueError, match="exactly one of text"):
        server_tokenize("http://h:1", "m")
    for answer in (b'{"tokens": [1, -1]}', b'{"count": 2}', b'{"tokens": [true]}', b"not json"):
        monkeypatch.setattr(tokenize_module, "post_json", lambda *a, answer=answer: (200, answer))
        with pytest.raises(ServerRequestError, match="POST http://h:1/tokenize"):
            server_tokenize("http://h:1", "m", text="a")


# -- the CLI: sources, tokenizers, the embedded default -----------------------------------------------------------------

def test_text_prompts_are_tokenised_by_the_server_raw_or_through_its_chat_template():
    with FakeServer() as server:
        url = server.base_url
        raw = _args(["--server", url, "--model", "fake", "--reference-server", url, "--prompt", "hello world", "--prompt", "abc"])
        chat = _args(["--server", url, "--model", "fake", "--oracle-server", url, "--prompt", "hello world", "--chat"])
    assert raw.prompts == [tokenize("hello world"), tokenize("abc")]
    assert chat.prompts == [chat_tokenize([{"role": "user", "content": "hello world"}])]
    assert raw.prompt_record["tokenizer"] == f"POST {url}/tokenize" and raw.prompt_record["source"] == "--prompt"
    assert raw.prompt_record["prompts"][0] == {"origin": "--prompt 1", "text": "hello world", "chat_template": False,
                                               "token_ids": tokenize("hello world")}
    assert chat.prompt_record["prompts"][0]["chat_template"] is True
    assert chat.prompt_record["prompts"][0]["messages"] == [{"role": "user", "content": "hello world"}]


def test_with_no_prompt_a_server_gets_the_embedded_workload_through_its_chat_template():
    with FakeServer() as server:
        args = _args(["--server", server.base_url, "--model", "fake", "--oracle-server", server.base_url])
    assert len(DEFAULT_KINDS) >= 3 and [p.origin for p in default_inputs()] == [f"workload {k}[0]" for k in DEFAULT_KINDS]
    assert args.prompts == [chat_tokenize(PROMPTS[kind][0]) for kind in DEFAULT_KINDS]
    assert args.prompt_record["source"] == "the embedded workload"
    assert all(entry["chat_template"] for entry in args.prompt_record["prompts"])


def test_a_tokenizer_folder_tokenises_instead_of_the_server_and_serves_a_subject(tokenizer_dir):
    from transformers import AutoTokenizer

    with FakeServer("no_tokenize") as server:  # the folder is used: the server's missing route is never asked
        args = _args(["--server", server.base_url, "--model", "fake", "--reference-server", server.base_url,
                      "--tokenizer", tokenizer_dir, "--prompt", "hello world", "--prompt", "hello", "--chat"])
    expected = AutoTokenizer.from_pretrained(tokenizer_dir).apply_chat_template(
        [{"role": "user", "content": "hello world"}], add_generation_prompt=True, tokenize=True)
    expected = list(expected["input_ids"] if hasattr(expected, "keys") else expected)
    assert args.prompts[0] == expected == [3, 5, 1, 2, 4, 5]
    assert args.prompt_record["tokenizer"] == f"--tokenizer {tokenizer_dir}"
    subject = _args(["fixtures.subjects:my_decoder", "--kind", "decoder", "--target", "fixtures.subjects:tiny_target",
                     "--prompt", "hello world", "--tokenizer", tokenizer_dir])
    assert subject.prompts == [[1, 2]]
    default = _args(["fixtures.subjects:my_decoder", "--kind", "decoder", "--target", "fixtures.subjects:tiny_target",
                     "--tokenizer", tokenizer_dir])
    assert len(default.prompts) == len(DEFAULT_KINDS) and default.prompts[0][:3] == [3, 5, 0]  # "user :" then unknown words


def test_token_ids_are_used_as_given_and_recorded():
    args = _args(["fixtures.subjects:my_decoder", "--kind", "decoder", "--target", "fixtures.subjects:tiny_target", "--prompts", "1,2;3"])
    assert args.prompts == [[1, 2], [3]]
    assert args.prompt_record == {"source": "--prompts", "tokenizer": None,
                                  "prompts": [{"origin": "--prompts", "token_ids": [1, 2]}, {"origin": "--prompts", "token_ids": [3]}]}


@pytest.mark.parametrize("extra, says", [
    (["--prompts", "1,2", "--prompt", "a"], "give one source of prompts, not --prompts and --prompt"),
    (["--prompt", "a", "--prompts-file", "f.jsonl"], "give one source of prompts, not --prompt and --prompts-file"),
    (["--prompts", "1,2", "--chat"], "--chat: nothing to tokenise; --prompts are token ids"),
    (["--prompts", "1,2", "--tokenizer", "."], "--tokenizer: nothing to tokenise"),
    (["--chat"], "--chat applies to --prompt TEXT or --prompts-file lines"),
    (["--prompt", ""], "--prompt (the first) is empty"),
    (["--prompts", "a b"], "--prompts must be ';'-separated lists of comma-separated token ids, got 'a b' (text prompts: --prompt TEXT)"),
    (["--prompts", "1,-2"], "--prompts must be non-negative token ids"),
    (["--prompt", "a", "--tokenizer", "/missing/tok"], "--tokenizer /missing/tok: the folder does not exist"),
])
def test_conflicting_or_bad_prompt_options_are_one_line(capsys, extra, says):
    err = _refused(capsys, ["--server", "http://127.0.0.1:9", "--model", "m", "--reference-server", "http://127.0.0.1:9", *extra])
    assert says in err


@pytest.mark.parametrize("argv, says", [
    (["--prompt", "a"], "need a SUBJECT (package.module:attr) or --server"),
    (["fixtures.subjects:my_verifier", "--prompt", "a"], "--prompt is for --kind decoder"),
    (["fixtures.subjects:my_verifier", "--tokenizer", ".", "--chat"], "--tokenizer, --chat are for --kind decoder"),
    (["fixtures.subjects:my_decoder", "--kind", "decoder", "--target", "a:b", "--prompt", "hello"],
     "text prompts of a SUBJECT need --tokenizer DIR"),
    (["fixtures.subjects:my_decoder", "--kind", "decoder", "--target", "a:b"], "or --tokenizer DIR alone for the embedded workload"),
])
def test_prompt_options_outside_a_decoder_or_without_a_tokenizer_are_refused(capsys, argv, says):
    assert says in _refused(capsys, argv)


def test_a_server_that_cannot_tokenise_is_one_line_naming_it(capsys, tokenizer_dir):
    err = _refused(capsys, ["--server", "http://127.0.0.1:9", "--model", "m", "--reference-server", "http://127.0.0.1:9", "--prompt", "a"])
    assert "--server http://127.0.0.1:9: cannot tokenise --prompt 1: the server did not answer" in err
    with FakeServer("no_tokenize") as server:
        err = _refused(capsys, ["--server", server.base_url, "--model", "fake", "--reference-server", server.base_url, "--prompt", "a"])
        assert "HTTP 404" in err and "give --tokenizer DIR" in err
    with FakeServer("text_tokenize") as server:  # text is fine; the embedded workload needs the chat form
        assert _args(["--server", server.base_url, "--model", "fake", "--reference-server", server.base_url,
                      "--prompt", "a"]).prompts == [tokenize("a")]
        err = _refused(capsys, ["--server", server.base_url, "--model", "fake", "--reference-server", server.base_url])
        assert "cannot tokenise workload qa[0]" in err and "HTTP 400" in err and "give --tokenizer DIR" in err
    err = _refused(capsys, ["fixtures.subjects:my_decoder", "--kind", "decoder", "--target", "a:b", "--prompt", "   ",
                            "--tokenizer", tokenizer_dir])
    assert f"--prompt 1: tokenised by --tokenizer {tokenizer_dir} to no tokens" in err


def test_the_report_keeps_the_prompts_and_a_resumed_run_tokenises_to_the_same_ids(tmp_path, capsys):
    path, again = tmp_path / "run.json", tmp_path / "again.json"
    with FakeServer() as server:
        common = ["check", "--server", server.base_url, "--model", "fake", "--target", "fixtures.fake_server:target_law",
                  "--length", "1", "--n", "300", "--tv", "0.5", "--samples-per-request", "8", "--prompt", "hello world"]
        assert main([*common, "--json", str(path)]) == 0
        out = capsys.readouterr().out
        assert f"prompts: 1 from --prompt, tokenised by POST {server.base_url}/tokenize; 11 tokens" in out
        document = json.loads(path.read_text())
        assert document["prompts"]["prompts"] == [{"origin": "--prompt 1", "text": "hello world", "chat_template": False,
                                                   "token_ids": tokenize("hello world")}]
        served = server.requests
        assert main([*common, "--json", str(again), "--resume", str(path)]) == 0  # finished: re-judged, not re-run
        assert server.requests == served
        assert json.loads(again.read_text())["subjects"][0]["verdict"] == document["subjects"][0]["verdict"]
        other = [a if a != "hello world" else "hello there" for a in common]
        assert main([*other, "--json", str(again), "--resume", str(path)]) == 2  # other ids: another campaign
        assert "prompts" in capsys.readouterr().err
    assert fake_server.V == 6
