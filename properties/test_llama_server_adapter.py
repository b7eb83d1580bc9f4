"""llama-server's adapter without the server (the real one: peers/test_llama_server.py): the settings as its
``/completion`` fields, refusals by name, the body, the answer read by the contract, the build refused before any
request, its counters."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from specdec.adapters.llama_cpp.llama_server import LlamaServerDecoder, llama_server_argv
from specdec.adapters.llama_cpp.llama_server_fields import CHAIN, completion_fields, server_seed
from specdec.adapters.openai.requests import Request
from specdec.adapters.openai.wire import parse_counters
from specdec.errors import PeerVersionError, ServerRequestError
from specdec.sampling_settings import SamplingSettings, UnsupportedSetting


def test_every_sampler_is_sent_off_included_and_the_chain_is_named():
    fields = completion_fields(SamplingSettings(temperature=0.7, top_p=0.8, presence_penalty=1.5, logit_bias={7: 1.0}, bad_words=[[3]]))
    assert fields["top_k"] == 0 and fields["min_p"] == 0.0 and fields["typical_p"] == 1.0  # the server's defaults are 40 and 0.05
    assert fields["presence_penalty"] == 1.5 and fields["repeat_penalty"] == 1.0 and fields["samplers"] == CHAIN
    assert fields["logit_bias"] == [[7, 1.0], [3, False]]  # a one-token bad word is a ban
    assert fields["dry_multiplier"] == 0.0 and fields["xtc_probability"] == 0.0 and fields["mirostat"] == 0
    json.dumps(fields)


@pytest.mark.parametrize("changes, field", [
    ({"min_new_tokens": 2, "stop_token_ids": [5]}, "min_new_tokens"),
    ({"allowed_token_ids": [1, 2]}, "allowed_token_ids"),
    ({"stop_token_ids": [5]}, "stop_token_ids"),
    ({"bad_words": [[3, 4]]}, "bad_words"),
    ({"logits_processor": lambda history, logits: logits}, "logits_processor"),
])
def test_what_the_endpoint_has_no_field_for_is_refused_by_name(changes, field):
    with pytest.raises(UnsupportedSetting, match=f"llama-server.*does not take {field}="):
        completion_fields(SamplingSettings(**changes))
    with pytest.raises(UnsupportedSetting, match=field):  # when the decoder is made, before any request
        LlamaServerDecoder("http://127.0.0.1:1", settings=SamplingSettings(**changes))


def test_the_body_carries_ids_n_cmpl_and_a_uint32_seed_or_none():
    decoder = LlamaServerDecoder("http://127.0.0.1:1", settings=SamplingSettings(temperature=0.5))
    body = decoder.payload(Request(0, (1, 2, 3), (0, 1, 2), 2**62 + 5), 4)
    assert body["prompt"] == [1, 2, 3] and body["n_predict"] == 4 and body["n_cmpl"] == 3 and body["return_tokens"] is True
    assert 0 <= body["seed"] < 2**32 - 1 and body["seed"] == server_seed(2**62 + 5) and body["temperature"] == 0.5
    assert server_seed(2**32 - 1) == 0  # never LLAMA_DEFAULT_SEED ("random")
    unseeded = LlamaServerDecoder("http://127.0.0.1:1", settings=SamplingSettings(seeded=False))
    assert unseeded.payload(Request(0, (1,), (0,), 9), 2)["seed"] == -1
    assert decoder.url == "http://127.0.0.1:1/completion" and "n_cmpl<=4" in decoder.settings


def test_the_answer_is_read_by_the_contract():
    decoder = LlamaServerDecoder("http://127.0.0.1:1")
    one, three = Request(0, (1,), (0,), 1), Request(0, (1,), (0, 1, 2), 1)
    assert decoder.read_answer(one, json.dumps({"tokens": [4, 5], "content": "x"}).encode(), 200, "r") == [[4, 5]]
    answers = [{"index": i, "tokens": [i, i]} for i in (2, 0, 1)]
    assert decoder.read_answer(three, json.dumps(answers).encode(), 200, "r") == [[0, 0], [1, 1], [2, 2]]
    for body, why in [(b"not json", "not JSON"), (json.dumps(answers[:2]).encode(), "2 completions for n_cmpl=3"),
                      (json.dumps({"content": "x"}).encode(), "tokens is missing"),
                      (json.dumps([{"index": 0, "tokens": [1]}] * 3).encode(), "index is 0")]:
        with pytest.raises(ServerRequestError, match=why):
            decoder.read_answer(three if body.startswith(b"[") else one, body, 200, "request 1")


class _Props(BaseHTTPRequestHandler):
    completions = 0

    def do_GET(self):  # noqa: N802 - http.server's name
        data = json.dumps({"build_info": "b9999-deadbee"}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):  # noqa: N802
        type(self).completions += 1
        self.send_response(500)
        self.end_headers()

    def log_message(self, *args):
        pass


def test_a_server_of_another_build_is_refused_before_any_request():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Props)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        decoder = LlamaServerDecoder(f"http://127.0.0.1:{server.server_address[1]}")
        with pytest.raises(PeerVersionError, match="0c1e570.*b9999-deadbee"):
            decoder([[1, 2]], 2, 0)
        assert _Props.completions == 0
    finally:
        server.shutdown()


def test_llama_servers_counters_are_read_like_vllms_with_the_first_draft_position_as_1():
    text = ("# TYPE llamacpp:spec_decode_num_drafts_total counter\nllamacpp:spec_decode_num_drafts_total 90\n"
            "llamacpp:spec_decode_num_draft_tokens_total 336\nllamacpp:spec_decode_num_accepted_tokens_total 149\n"
            'llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="0"} 66\n')
    assert parse_counters(text) == {"drafts": 90, "draft_tokens": 336, "accepted_tokens": 149, "accepted_at_1": 66}


def test_the_command_line_names_the_speculation():
    argv = llama_server_argv("m.gguf", 8080, binary="/bin/llama-server", speculation="draft", num_draft_tokens=3)
    assert argv[:3] == ["/bin/llama-server", "-m", "m.gguf"] and "--metrics" in argv
    assert argv[argv.index("--spec-type") + 1] == "draft-simple" and argv[argv.index("-md") + 1] == "m.gguf"
    assert argv[argv.index("--spec-draft-n-max") + 1] == "3"
    ngram = llama_server_argv("m.gguf", 8080, speculation="ngram")
    assert ngram[ngram.index("--spec-type") + 1] == "ngram-simple" and "-md" not in ngram
    assert "--spec-type" not in llama_server_argv("m.gguf", 8080)
    with pytest.raises(ValueError, match="speculation must be None or one of"):
        llama_server_argv("m.gguf", 8080, speculation="eagle")
