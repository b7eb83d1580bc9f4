"""Token-id prompts as the text ``llama-speculative`` takes, and the ids it bans with ``--ignore-eos``.

``llama-speculative`` reads its prompt as text (``-p``) and tokenizes it itself with
``common_tokenize(ctx_tgt, params.prompt, true, true)`` (``examples/speculative/speculative.cpp``, ``main``: special
tokens added and parsed).  specdec's checks hand a decoder token ids, so :class:`PromptText` turns each prompt into
text with the model's own llama.cpp tokenizer (llama-cpp-python 0.3.36's ``Llama(vocab_only=True)``, the same
vendored llama.cpp) and tokenizes the text back the way the example does (``tokenize(text, add_bos=True,
special=True)``): a prompt whose ids do not come back is refused (a ValueError naming its row), never sent altered.

``--ignore-eos`` (``common/common.cpp``, ``common_init_from_params``) adds a logit bias of -inf to every
end-of-generation token (``llama_vocab_is_eog``) in the sampler chains of the target and the draft:
:meth:`PromptText.eog_ids` lists them, for an oracle that must ban the same tokens.
"""

from __future__ import annotations

import os

from .._common import require_version
from .in_process import DISTRIBUTIONS, SUPPORTED_LLAMA_CPP

__all__ = ["PromptText"]


class PromptText:
    """The GGUF ``model_path``'s tokenizer, loaded (vocabulary only) on first use."""

    def __init__(self, model_path: str | os.PathLike) -> None:
        self.model_path = os.fspath(model_path)
        self._llm = None
        self._texts: dict[tuple[int, ...], str] = {}

    @property
    def llm(self):
        if self._llm is None:
            require_version("specdec.adapters.llama_cpp.speculative_vocab", DISTRIBUTIONS, SUPPORTED_LLAMA_CPP)
            from llama_cpp import Llama

            self._llm = Llama(model_path=self.model_path, vocab_only=True, verbose=False)
        return self._llm

    def text(self, prompt, row: int = 0) -> str:
        """The text that ``llama-speculative`` tokenizes into exactly ``prompt`` (a ValueError naming ``row`` if none is
        found this way)."""
        key = tuple(int(t) for t in prompt)
        if not key:
            raise ValueError(f"prompts[{row}] is empty: llama-speculative needs at least one prompt token")
        if key not in self._texts:
            raw = self.llm.detokenize(list(key), special=True)
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise ValueError(f"prompts[{row}] does not decode to UTF-8 text ({raw[:60]!r}...): llama-speculative takes "
                                 "its prompt as text") from None
            back = tuple(self.llm.tokenize(text.encode("utf-8"), add_bos=True, special=True))
            if back != key:
                raise ValueError(f"prompts[{row}] does not survive llama.cpp's tokenizer: its text {text[:60]!r} tokenizes to "
                                 f"{list(back[:12])}..., not {list(key[:12])}...; llama-speculative takes text, so this prompt "
                                 "cannot be given to it as these ids")
            self._texts[key] = text
        return self._texts[key]

    def eog_ids(self) -> list[int]:
        """Every end-of-generation token id of the vocabulary (``llama_vocab_is_eog``)."""
        import llama_cpp

        vocab = llama_cpp.llama_model_get_vocab(self.llm.model)
        return [i for i in range(self.llm.n_vocab()) if llama_cpp.llama_vocab_is_eog(vocab, i)]

    def close(self) -> None:
        if self._llm is not None:
            self._llm.close()
            self._llm = None
