"""The conformance engine (docs/reference.md §7, docs/verifier.md, docs/decoder.md).

One public call per level, one engine behind them:

* :func:`check_verifier` - any :class:`specdec.protocols.TokenVerifier`;
* :func:`check_multidraft` - any :class:`specdec.protocols.MultiDraftVerifier`;
* :func:`check_tree` - any :class:`specdec.protocols.TreeVerifier`;
* :func:`check_decoder` - any :class:`specdec.protocols.Decoder` against a target law;
* :func:`check_law` - one goodness-of-fit check, for a test's own sampler;
* :func:`check_ab` - two decoders against each other (two samples), where no law is known.

Every check shares one :class:`ErrorBudget` when one is given (the pytest plugin
gives one per run), states its sample size and detectable TV before sampling, and
reports a verdict that says what was tested (PASS / INCONCLUSIVE / FAIL).
"""

from .ab import check_ab
from .budget import BudgetExhausted, ErrorBudget
from .cases import ChainCase, MultiDraftCase, TokenCase, TreeCase
from .catalogue import chain_cases, multidraft_cases, pair, pair_names, token_cases, tree_cases
from .checks import Check
from .console import Console
from .decoder import check_decoder
from ..protocols import ContractError
from .plan import SampleRequest
from .subject import CallGuard, SubjectError, SubjectFailure
from .report import Report
from .single import check_law
from .verifier import check_multidraft, check_tree, check_verifier

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
    "check_tree",
    "check_verifier",
    "multidraft_cases",
    "pair",
    "pair_names",
    "token_cases",
    "tree_cases",
]
