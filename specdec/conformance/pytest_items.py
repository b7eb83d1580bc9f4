"""The engine inside a user's pytest run: a runner that fails a test with a readable message, and a
factory that expands the whole campaign into parametrised items (docs/verifier.md).

The pytest plugin (``_specdec_pytestplugin``) builds :class:`SpecdecRunner` for its
``specdec_report`` fixture from the run's options (``--specdec-seed``, ``--specdec-tv``,
``--specdec-budget``, ``--specdec-device``) and the run's :class:`ErrorBudget`, so every check a
user's test makes shares the run's family-wise alpha.  ``pytest`` is imported only when a check
fails or a suite is built.

In a user's test file::

    from specdec.conformance.pytest_items import conformance_suite
    from my_engine import my_verifier

    test_my_verifier = conformance_suite(my_verifier)        # one item per case of the catalogue
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from .budget import ErrorBudget
from .cases import ChainCase, MultiDraftCase, TokenCase
from .report import Report

KINDS = ("verifier", "multidraft", "decoder")


@dataclass
class SpecdecRunner:
    """Runs checks under one run's settings and budget; a FAIL (and, unless allowed, an
    INCONCLUSIVE) fails the calling test with the report: statistic, p, n, detectable TV, case,
    position and prefix."""

    budget: ErrorBudget | None = None
    seed: int = 0
    tv: float | None = 0.01
    time_budget: float | None = None
    device: str | None = None

    def _settings(self, kwargs: dict) -> dict:
        settings = dict(seed=self.seed, tv=self.tv, time_budget=self.time_budget, budget=self.budget)
        if self.device is not None:
            settings["device"] = self.device
        settings.update(kwargs)
        return settings

    def _host_settings(self, kwargs: dict) -> dict:
        settings = self._settings(kwargs)
        settings.pop("device", None)  # a decoder's counts live on the host
        return settings

    def _judge(self, report: Report, allow_inconclusive: bool) -> Report:
        if report.verdict in ("FAIL", "ERROR", "INTERRUPTED") or (report.verdict == "INCONCLUSIVE" and not allow_inconclusive):
            import pytest

            pytest.fail(report.format(), pytrace=False)
        return report

    def verifier(self, subject, *, case: TokenCase | ChainCase | None = None, allow_inconclusive: bool = False, **kwargs) -> Report:
        """:func:`check_verifier` of a TokenVerifier; ``case`` runs one case of the catalogue
        (the ``specdec_cases`` fixture gives them), otherwise ``cases=`` / ``chains=`` or the defaults."""
        from .verifier_checks import check_verifier

        if isinstance(case, TokenCase):
            kwargs.update(cases=[case], chains=[])
        elif isinstance(case, ChainCase):
            kwargs.update(cases=[], chains=[case])
        elif case is not None:
            raise TypeError(f"case must be a TokenCase or a ChainCase, got {type(case).__name__}")
        return self._judge(check_verifier(subject, **self._settings(kwargs)), allow_inconclusive)

    def multidraft(self, subject, *, case: MultiDraftCase | None = None, allow_inconclusive: bool = False, **kwargs) -> Report:
        """:func:`check_multidraft` of a MultiDraftVerifier (one ``case``, or ``cases=`` / the defaults)."""
        from .verifier_checks import check_multidraft

        if isinstance(case, MultiDraftCase):
            kwargs.update(cases=[case])
        elif case is not None:
            raise TypeError(f"case must be a MultiDraftCase, got {type(case).__name__}")
        return self._judge(check_multidraft(subject, **self._settings(kwargs)), allow_inconclusive)

    def decoder(self, subject, target, prompts, *, allow_inconclusive: bool = False, **kwargs) -> Report:
        """:func:`check_decoder` of a Decoder against ``target`` (a TargetLaw or a transformers model)."""
        from .decoder_check import check_decoder

        return self._judge(check_decoder(subject, target, prompts, **self._host_settings(kwargs)), allow_inconclusive)

    def ab(self, subject, reference, prompts, *, allow_inconclusive: bool = False, **kwargs) -> Report:
        """:func:`check_ab`: two Decoders against each other (two samples, H1-H3), e.g. an engine with
        and without speculation."""
        from .ab_check import check_ab

        return self._judge(check_ab(subject, reference, prompts, **self._host_settings(kwargs)), allow_inconclusive)

    def tokens(self, subject, oracle, prompts, *, allow_inconclusive: bool = False, **kwargs) -> Report:
        """:func:`check_tokens`: every token a Decoder emits against a LawOracle's law of it (P1-P4)."""
        from .token_check import check_tokens

        return self._judge(check_tokens(subject, oracle, prompts, **self._host_settings(kwargs)), allow_inconclusive)


def suite_cases(kind: str = "verifier", *, which: str = "default", children=("iid", "distinct")) -> list:
    """The catalogue a suite of ``kind`` runs: token and chain cases, or multi-draft cases."""
    from .catalogue import chain_cases, multidraft_cases, token_cases

    if kind == "verifier":
        return [*token_cases(which), *chain_cases(which)]
    if kind == "multidraft":
        return multidraft_cases(which, children=children)
    raise ValueError(f"kind must be 'verifier' or 'multidraft' for catalogue cases, got {kind!r}")


def conformance_suite(subject, kind: str = "verifier", *, cases: Sequence | None = None, target=None,
                      prompts: Sequence[Sequence[int]] | None = None, children=("iid", "distinct"), **kwargs):
    """A pytest test function parametrised with one item per case (per prompt for a decoder).

    Assign it to a ``test_*`` name in a test module.  Each item asks the ``specdec_report``
    fixture, so it runs under the run's options and shares its error budget.  ``cases``: a subset
    of the catalogue (default: all of :func:`suite_cases`).  A decoder needs ``target`` and
    ``prompts``.  Other keyword arguments go to the check (``length=``, ``tv=``, ...).
    """
    import pytest

    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if not callable(subject):
        raise TypeError(f"subject must be callable, got {type(subject).__name__}")
    if kind == "decoder":
        if target is None or not prompts:
            raise ValueError("a decoder suite needs target= (a TargetLaw or a transformers model) and prompts= (token-id lists)")
        params, ids = [list(p) for p in prompts], [f"prompt{i}" for i in range(len(prompts))]

        @pytest.mark.parametrize("specdec_prompt", params, ids=ids)
        def test_decoder_conformance(specdec_report, specdec_prompt):
            specdec_report.decoder(subject, target, [specdec_prompt], **kwargs)

        return test_decoder_conformance
    chosen = list(cases) if cases is not None else suite_cases(kind, children=children)
    run = "verifier" if kind == "verifier" else "multidraft"

    @pytest.mark.parametrize("specdec_case", chosen, ids=[c.name for c in chosen])
    def test_conformance(specdec_report, specdec_case):
        getattr(specdec_report, run)(subject, case=specdec_case, **kwargs)

    return test_conformance
