"""What every adapter checks before calling its peer: a token verifier's inputs, a decoder's prompt rows, the installed version."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from .._validation import as_int, as_pad_id, check_generator
from ..errors import PeerVersionError
from ..verify import validate_token_inputs


def check_adapter_inputs(draft_tokens, draft_probs, target_probs, generator, pad_id, validate: bool) -> int:
    """:func:`specdec.verify_tokens`' checks (values only when ``validate``), the generator on the
    tensors' device, and ``pad_id``; returns the pad id as an int."""
    validate_token_inputs(draft_tokens, draft_probs, target_probs, values=validate)
    check_generator(generator, target_probs.device)
    return as_pad_id(pad_id)


def repad(tokens: torch.Tensor, pad_id: int, placeholder: int = -1) -> torch.Tensor:
    """int64 tokens with the peer's ``placeholder`` replaced by ``pad_id``."""
    tokens = tokens.to(torch.int64)
    return tokens if pad_id == placeholder else torch.where(tokens == placeholder, pad_id, tokens)


def import_peer(module: str, attr: str | None, requirement: str):
    """``module.attr`` (or the module, when ``attr`` is None) of a peer's package, imported on first
    use; an ImportError names the version the adapter was written against."""
    import importlib

    try:
        imported = importlib.import_module(module)
        return imported if attr is None else getattr(imported, attr)
    except (ImportError, AttributeError) as error:  # pragma: no cover - exercised only where the peer is absent
        raise ImportError(f"this adapter needs {requirement}: {error}") from None


def installed_version(distributions: tuple[str, ...]) -> tuple[str, str] | None:
    """(distribution, version) of the first of ``distributions`` that is installed, read from the
    package metadata (the package itself is not imported); None when none is."""
    from importlib import metadata

    for name in distributions:
        try:
            return name, metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None


def require_version(adapter: str, distributions: tuple[str, ...], supported: tuple[str, ...]) -> str:
    """The installed version of the peer if ``adapter`` was tested on it; a :class:`PeerVersionError`
    naming both versions otherwise (never a guess: a stale adapter would report its own mistakes as
    the peer's bugs)."""
    found = installed_version(distributions)
    wanted = " or ".join(supported)
    if found is None:
        raise PeerVersionError(f"{adapter} needs {distributions[0]} {wanted}, which is not installed")
    name, version = found
    if version.split("+")[0] not in supported:
        raise PeerVersionError(f"{adapter} supports {distributions[0]} {wanted}; installed: {name} {version} "
                               "(not tested on it; it does not guess another version's contract)")
    return version


def request_seeds(seed: int, count: int) -> list[int]:
    """``count`` independent 63-bit seeds derived from ``seed`` (numpy's SeedSequence): one per request or
    row of a call, so rows are independent draws and a call is reproducible (vLLM's engine, llama.cpp)."""
    state = np.random.SeedSequence(int(seed)).generate_state(max(count, 1), dtype=np.uint64)[:count]
    return [int(x) >> 1 for x in state]


def checked_prompt_rows(prompts, vocab: int | None, engine: str, longest: int | None = None, why: str = "") -> list[list[int]]:
    """The rows of a call as token-id lists: ids in [0, vocab), none empty (``engine`` needs a token to condition on)
    and, where ``longest`` is given, none longer (``why`` says what the engine's context must also hold)."""
    if isinstance(prompts, (str, bytes)) or not isinstance(prompts, Sequence):
        raise TypeError(f"prompts must be a sequence of token-id lists, got {type(prompts).__name__}")
    rows = []
    for i, prompt in enumerate(prompts):
        row = [as_int(f"prompts[{i}][{j}]", t, minimum=0, maximum=None if vocab is None else vocab - 1) for j, t in enumerate(prompt)]
        if not row:
            raise ValueError(f"prompts[{i}] is empty: {engine} needs at least one token to condition on")
        if longest is not None and len(row) > longest:
            raise ValueError(f"prompts[{i}] has {len(row)} tokens: {why}")
        rows.append(row)
    return rows
