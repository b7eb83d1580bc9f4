"""The versioned case catalogue (``data/catalogue-v2.json``) and the default campaigns.

The JSON file is the source of truth: every (target, draft) pair with V <= 64 is
stored to 17 significant digits, so the cases are the same on every machine
(float results of the builders may differ in the last bit across CPUs; the
builders are kept only to regenerate the file, and a test checks that they still
reproduce it to 1e-12).  Large pairs are generated from numpy's portable PCG64.

* :func:`token_cases` / :func:`chain_cases` / :func:`multidraft_cases` - the
  default campaigns of ``check_verifier`` and ``check_multidraft``: every position
  (chains of several V, K >= 2, seeds), rows that differ per position, the
  deterministic-drafter path (E5) and float32 as well as float64 inputs.
* :func:`pair` / :func:`pair_names` - the named pairs, for ``specdec compare --case``
  and for third parties' own cases.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np
import torch

from .cases import ChainCase, MultiDraftCase, TokenCase, TreeCase

VERSION = 2
DATA = Path(__file__).parent / "data" / f"catalogue-v{VERSION}.json"


@functools.lru_cache(maxsize=1)
def _data() -> dict:
    return json.loads(DATA.read_text())


def _generated(spec: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """A large pair from numpy's PCG64.  "peaked": softmax(scale * N(0, 1)) for target and draft;
    "sparse": Dirichlet(1) masses on ``support`` ids each, the last id always in the target's,
    half of the draft's ids shared with the target's."""
    vocab = spec["vocab"]
    if spec["kind"] == "sparse":
        rng = np.random.default_rng(spec["seed"])
        size = spec["support"]
        ids = rng.choice(vocab - 1, size=2 * size, replace=False)
        target_ids = np.r_[ids[: size - 1], vocab - 1]
        draft_ids = np.r_[target_ids[: size // 2], ids[size : size + size - size // 2]]
        rows = []
        for chosen in (target_ids, draft_ids):
            weights = np.zeros(vocab)
            weights[chosen] = rng.dirichlet(np.ones(size))
            rows.append(torch.from_numpy(weights / weights.sum()))
        return rows[0], rows[1]
    rows = []
    for key in ("seed_target", "seed_draft"):
        logits = spec["scale"] * np.random.default_rng(spec[key]).standard_normal(vocab)
        weights = np.exp(logits - logits.max())
        rows.append(torch.from_numpy(weights / weights.sum()))
    return rows[0], rows[1]


def pair_names() -> list[str]:
    data = _data()
    return sorted(data["pairs"]) + sorted(data["generated"])


def pair(name: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(target_probs, draft_probs) float64 of a named pair of the catalogue."""
    data = _data()
    if name in data["pairs"]:
        entry = data["pairs"][name]
        return torch.tensor(entry["target"], dtype=torch.float64), torch.tensor(entry["draft"], dtype=torch.float64)
    if name in data["generated"]:
        return _generated(data["generated"][name])
    raise ValueError(f"unknown case {name!r}; the catalogue v{VERSION} holds: {', '.join(pair_names())}")


def note(name: str) -> str:
    data = _data()
    return (data["pairs"].get(name) or data["generated"].get(name) or {}).get("note", "")


def _token(name: str, *, drafter: str = "sampled", dtype: torch.dtype = torch.float64) -> TokenCase:
    label = name + ("" if drafter == "sampled" else f" {drafter}") + (" float32" if dtype == torch.float32 else "")
    return TokenCase.from_pair(label, *pair(name), drafter=drafter, dtype=dtype, note=note(name))


def token_cases(which: str = "default") -> list[TokenCase]:
    """The verifier campaign's one-step cases (K = 2, rows rolled per position).

    ``default``: the docs/reference.md §3 pair, a peaked V=16 pair in float64, float32 and with
    point-mass drafts, p == q (E2), disjoint supports, masses of 1e-30, V = 1, a
    top-k/temperature warped pair in float32 and a sparse pair at V = 1031 (two-level inverse
    CDF, not a multiple of 256, mass on the last id: B6).  ``full``: every pair of the catalogue, plus the default variants.
    """
    if which not in ("default", "full"):
        raise ValueError(f"which must be 'default' or 'full', got {which!r}")
    cases = [
        _token("spec_section3"),
        _token("peaked_v16"),
        _token("peaked_v16", dtype=torch.float32),
        _token("peaked_v16", drafter="point_mass"),
        _token("equal"),
        _token("disjoint"),
        _token("tiny_mass"),
        _token("single_token"),
        _token("warped_topk_temp_v64", dtype=torch.float32),
        _token("sparse_v1031"),
    ]
    if which == "full":
        taken = {c.name for c in cases}
        cases += [_token(n) for n in pair_names() if n not in taken]
        cases += [_token("random_sparse_v20", drafter="point_mass"), _token("peaked_v8193", dtype=torch.float32)]
    return cases


def chain_cases(which: str = "default") -> list[ChainCase]:
    """Chains of random conditional tables: every position and prefix, K >= 2, several V and seeds."""
    cases = [
        ChainCase("chain V=4 K=2 L=3", vocab=4, num_draft_tokens=2, length=3, seed=1),
        ChainCase("chain V=3 K=3 L=4 float32", vocab=3, num_draft_tokens=3, length=4, seed=2, dtype=torch.float32),
        ChainCase("chain V=4 K=2 L=3 point_mass", vocab=4, num_draft_tokens=2, length=3, seed=3, drafter="point_mass"),
        ChainCase("chain V=2 K=4 L=5", vocab=2, num_draft_tokens=4, length=5, seed=4, sharpness=1.0),
    ]
    if which == "full":
        cases += [
            ChainCase("chain V=5 K=2 L=3", vocab=5, num_draft_tokens=2, length=3, seed=5),
            ChainCase("chain V=3 K=1 L=4 flat", vocab=3, num_draft_tokens=1, length=4, seed=6, sharpness=0.3),
        ]
    elif which != "default":
        raise ValueError(f"which must be 'default' or 'full', got {which!r}")
    return cases


def multidraft_cases(which: str = "default", *, children=("iid", "distinct")) -> list[MultiDraftCase]:
    """k drafts at one position: docs/reference.md §3's pair at k = 2, 3, a peaked V=6 pair, distinct children.

    ``children``: the proposal kinds the subject supports ("iid": k i.i.d. drafts with
    draft_probs; "distinct": q's top-k tokens as deterministic children, draft_probs None).
    """
    if isinstance(children, str) or not set(children) <= {"iid", "distinct"} or not children:
        raise ValueError(f"children must be a non-empty subset of ('iid', 'distinct'), got {children!r}")
    spec, peaked6, peaked16 = pair("spec_section3"), pair("peaked_v6"), pair("peaked_v16")
    cases = [
        MultiDraftCase("spec_section3 k=2", *spec, num_drafts=2),
        MultiDraftCase("spec_section3 k=3", *spec, num_drafts=3),
        MultiDraftCase("peaked_v6 k=2 float32", *peaked6, num_drafts=2, dtype=torch.float32),
        MultiDraftCase("spec_section3 k=2 distinct", *spec, num_drafts=2, children="distinct"),
        MultiDraftCase("peaked_v16 k=3 distinct", *peaked16, num_drafts=3, children="distinct"),
    ]
    if which == "full":
        cases += [MultiDraftCase("peaked_v16 k=2", *peaked16, num_drafts=2), MultiDraftCase("equal k=3", *pair("equal"), num_drafts=3)]
    elif which != "default":
        raise ValueError(f"which must be 'default' or 'full', got {which!r}")
    return [c for c in cases if c.children in children]


# ------------------------------------------------------------------ regenerating the data file


def build_pairs() -> dict[str, tuple[list[float], list[float], str]]:
    """How the stored pairs were made (run :func:`write` after a deliberate change, and bump VERSION)."""
    from ..warpers import SamplingConfig, warped_probs

    def t(values):
        x = torch.tensor(values, dtype=torch.float64)
        return x / x.sum()

    def dirichlet(vocab, seed, concentration):
        return torch.from_numpy(np.random.default_rng(seed).dirichlet(np.full(vocab, concentration)))

    def warped(vocab, seed, config):
        logits = 2.0 * torch.randn(vocab, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
        return warped_probs(logits, config, dtype=torch.float64)

    g = torch.Generator().manual_seed(7)
    peaked16 = [(3 * torch.randn(16, generator=g, dtype=torch.float64)).softmax(-1) for _ in range(2)]
    rng6 = np.random.default_rng(42)
    peaked6 = [torch.from_numpy(np.exp(2.5 * rng6.standard_normal(6))) for _ in range(2)]
    pairs = {
        "spec_section3": (t([0.5, 0.3, 0.2]), t([0.2, 0.3, 0.5]), "docs/reference.md §3 table, k = 1: acceptance 0.7"),
        "spec_section4": (t([1, 2]), t([2, 1]), "docs/reference.md §4 worked example, one token: acceptance 2/3"),
        "equal": (t([0.1, 0.2, 0.3, 0.4]), t([0.1, 0.2, 0.3, 0.4]), "E2: p == q, the residual is empty"),
        "disjoint": (t([0.5, 0.5, 0, 0]), t([0, 0, 0.25, 0.75]), "beta = 0: every draft is rejected"),
        "one_hot_mismatch": (t([0, 1, 0]), t([1, 0, 0]), "greedy target, wrong draft"),
        "single_token": (t([1.0]), t([1.0]), "V = 1"),
        "tiny_mass": (t([1e-30, 0.5, 0.5 - 1e-30]), t([0.5, 1e-30, 0.5 - 1e-30]), "masses near 1e-30"),
        "peaked_v16": (peaked16[0], peaked16[1], "peaked V = 16: the mutation table's case"),
        "peaked_v6": (t(peaked6[0].tolist()), t(peaked6[1].tolist()), "peaked V = 6 (multi-draft)"),
        "random_dirichlet_v12": (dirichlet(12, 0, 1.0), dirichlet(12, 1, 1.0), "Dirichlet(1), V = 12"),
        "random_sparse_v20": (dirichlet(20, 2, 0.1), dirichlet(20, 3, 0.1), "Dirichlet(0.1), V = 20: many tiny masses"),
        "flat_vs_peaked_v10": (torch.full((10,), 0.1, dtype=torch.float64), dirichlet(10, 4, 0.2), "uniform target, peaked draft"),
        "warped_topk_temp_v64": (
            warped(64, 5, SamplingConfig(temperature=0.7, top_k=10)),
            warped(64, 6, SamplingConfig(temperature=0.7, top_k=10)),
            "top-k 10 at T = 0.7 on both: zeros outside each top-k (E6)",
        ),
        "warped_topp_v64": (
            warped(64, 7, SamplingConfig(top_p=0.9)),
            warped(64, 8, SamplingConfig(top_p=0.8, temperature=1.3)),
            "top-p 0.9 target, top-p 0.8 T = 1.3 draft (E6)",
        ),
    }
    return {k: (v[0].tolist(), v[1].tolist(), v[2]) for k, v in pairs.items()}


GENERATED = {
    "sparse_v1031": {"kind": "sparse", "vocab": 1031, "seed": 10, "support": 40,
                     "note": "V = 4 * 256 + 7, 40-token supports reaching the last id: two-level inverse CDF (B6)"},
    "peaked_v1031": {"kind": "peaked", "vocab": 1031, "seed_target": 10, "seed_draft": 11, "scale": 3.0,
                     "note": "V = 4 * 256 + 7, peaked over every id: hundreds of pooled bins"},
    "peaked_v8193": {"kind": "peaked", "vocab": 8193, "seed_target": 0, "seed_draft": 1, "scale": 4.0,
                     "note": "V = 32 * 256 + 1: not a multiple of kernel tiles (B6)"},
}


def write() -> None:
    """Regenerate the data file from :func:`build_pairs` (a change must bump VERSION)."""
    pairs = {k: {"target": t, "draft": d, "note": n} for k, (t, d, n) in build_pairs().items()}
    DATA.write_text(json.dumps({"version": VERSION, "pairs": pairs, "generated": GENERATED}, indent=1) + "\n")


if __name__ == "__main__":
    write()


def tree_cases(which: str = "default", *, children=("iid", "distinct")) -> list[TreeCase]:
    """Draft trees of depth 2-3 and width 2-3 over random conditional tables, i.i.d. and distinct children.

    ``children``: the proposal kinds the subject supports (a target-only tree sampler: "distinct").
    """
    shapes = {
        "depth 2, width 2": (-1, 0, 0, 1, 1),  # a binary tree: two children at the root, two under the first
        "depth 3, width 3": (-1, 0, 0, 0, 1, 1, 2, 4),  # three at the root, a path of three under the first
        "depth 2, width 3 full": (-1, 0, 0, 0, 1, 1, 1, 2, 2, 2),
    }
    if which not in ("default", "full"):
        raise ValueError(f"which must be 'default' or 'full', got {which!r}")
    cases = []
    for kind in children:
        as_tuple = ("iid", "distinct")
        if kind not in as_tuple:
            raise ValueError(f"children must hold 'iid' and/or 'distinct', got {kind!r}")
        cases += [
            TreeCase(f"tree {name} {kind} V=4 L=3", vocab=4, parents=parents, length=3, seed=11 + i, children=kind)
            for i, (name, parents) in enumerate(shapes.items()) if which == "full" or i < 2
        ]
        cases.append(TreeCase(f"tree depth 2, width 2 {kind} V=3 L=4 float32", vocab=3, parents=shapes["depth 2, width 2"],
                              length=4, seed=21, children=kind, dtype=torch.float32))
    return cases
