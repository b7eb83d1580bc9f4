"""The conformance engine (docs/reference.md §7, docs/verifier.md, docs/decoder.md).

One public call per level, one engine behind them:

* :func:`check_verifier` - any :class:`specdec.protocols.TokenVerifier`;
* :func:`check_multidraft` - any :class:`specdec.protocols.MultiDraftVerifier`;
* :func:`check_tree` - any :class:`specdec.protocols.TreeVerifier`;
* :func:`check_decoder` - any :class:`specdec.protocols.Decoder` against a target law;
* :func:`check_law` - one goodness-of-fit check, for a test's own sampler;
* :func:`check_ab` - two decoders against each other (two samples), where no law is known;
* :func:`check_tokens` - every token a decoder emits against a law oracle's law of it (P1-P4).

Every check takes its run settings as one :class:`specdec.RunSettings` (``settings=``) or as
keywords, shares one :class:`ErrorBudget` when one is given (the pytest plugin gives one per run),
states its sample size and detectable TV before sampling, and reports a verdict that says what was
tested (PASS / INCONCLUSIVE / FAIL / ERROR / INTERRUPTED).
"""

from ..errors import BudgetExhausted, ContractError, SubjectError
from ..settings import RunSettings
from .ab_check import check_ab
from .budget import ErrorBudget
from .calls import CallGuard, SubjectFailure
from .cases import ChainCase, MultiDraftCase, TokenCase, TreeCase
from .catalogue import chain_cases, multidraft_cases, pair, pair_names, token_cases, tree_cases
from .checks import Check
from .console import Console
from .decoder_check import check_decoder
from .law_check import check_law
from .report import Report
from .sampling_plan import SampleRequest
from .token_check import check_tokens
from .verifier_checks import check_multidraft, check_tree, check_verifier

__all__ = [
    "BudgetExhausted",
    "CallGuard",
    "ChainCase",
    "Check",
    "Console",
    "ContractError",
    "ErrorBudget",
    "MultiDraftCase",
    "Report",
    "RunSettings",
    "SampleRequest",
    "SubjectError",
    "SubjectFailure",
    "TokenCase",
    "TreeCase",
    "chain_cases",
    "check_ab",
    "check_decoder",
    "check_law",
    "check_multidraft",
    "check_tokens",
    "check_tree",
    "check_verifier",
    "multidraft_cases",
    "pair",
    "pair_names",
    "token_cases",
    "tree_cases",
]
