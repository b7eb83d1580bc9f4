"""LP oracles for the transport view of verification (docs/reference.md §2, §3), solved with scipy HiGHS.

These are independent cross-checks of the closed forms in :mod:`specdec.laws.transport`;
the solver is not trusted blindly: :func:`certificate` checks primal = dual
objective, dual feasibility and zero reduced cost on the plan's support.

(F5)  max sum_i Pi_ii  s.t.  Pi 1 = p, Pi^T 1 = q, Pi >= 0          optimum beta = 1 - TV
(F7)  max sum_{xbar} sum_{y in xbar} pi(xbar, y)  s.t.  sum_y pi(xbar, y) = Q(xbar),
      sum_xbar pi(xbar, y) = p(y), pi >= 0                           optimum alpha*_k
(F8)  max sum a(S, y)  s.t.  sum_{y in S} a(S, y) <= Q(S), sum_{S contains y} a(S, y) <= p(y)
      (bipartite max-flow over the sets S of distinct drafts)        optimum alpha*_k

Variables of (F5) are vec(Pi) row-major: rows are the output (target), columns the draft.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
from scipy import optimize, sparse

from .._validation import as_int, as_law_pair

MAX_LP_VOCAB = 1000  # (F5) has V^2 variables
MAX_LP_VARIABLES = 200_000  # (F7) has V^(k+1) variables
MAX_FLOW_VOCAB = 14  # (F8) enumerates subsets of the vocabulary
# HiGHS's defaults (1e-7) are coarser than the 1e-9 the certificate checks; presolve drops
# masses far below its tolerances (e.g. 1e-272) and then calls a feasible problem infeasible.
HIGHS_OPTIONS = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10, "presolve": False}


def normalized_pair(target_probs, draft_probs) -> tuple[np.ndarray, np.ndarray]:
    """float64 numpy vectors, checked and renormalised in float64 by the one policy
    (:func:`specdec._validation.as_law`; docs/reference.md §2: renormalise before solving)."""
    target, draft = as_law_pair(target_probs, draft_probs, ndim=1)
    return target.numpy(), draft.numpy()


@dataclass(frozen=True)
class LPSolution:
    """An LP in the form min c^T x s.t. A x = b, x >= 0, solved, with HiGHS's duals."""

    optimum: float  # the maximisation's optimum (= -c^T x)
    x: np.ndarray  # primal solution
    duals: np.ndarray  # y = d(c^T x)/db, HiGHS `eqlin.marginals`
    cost: np.ndarray  # c
    a_eq: sparse.csr_matrix  # A
    b_eq: np.ndarray  # b

    @property
    def plan(self) -> np.ndarray:
        """(F5) only: the plan Pi (V_out, V_draft)."""
        vocab = int(round(np.sqrt(self.x.size)))
        return self.x.reshape(vocab, vocab)


@dataclass(frozen=True)
class Certificate:
    """Optimality evidence for an :class:`LPSolution`, independent of the solver's status."""

    duality_gap: float  # |c^T x - b^T y|
    dual_infeasibility: float  # max(0, -(c - A^T y)) over all variables
    complementary_slackness: float  # max |reduced cost| * x over the plan's support
    primal_infeasibility: float  # max |A x - b| and max(0, -x)

    def holds(self, tol: float = 1e-9) -> bool:
        return max(self.duality_gap, self.dual_infeasibility, self.complementary_slackness, self.primal_infeasibility) <= tol


def _solve(cost: np.ndarray, a_eq: sparse.csr_matrix, b_eq: np.ndarray) -> LPSolution:
    res = optimize.linprog(cost, A_eq=a_eq, b_eq=b_eq, bounds=(0, None), method="highs", options=HIGHS_OPTIONS)
    if res.status != 0:
        raise RuntimeError(f"HiGHS did not solve the LP: status {res.status}, {res.message}")
    return LPSolution(-float(res.fun), res.x, np.asarray(res.eqlin.marginals), cost, a_eq, b_eq)


def _two_marginals(num_rows: int, num_cols: int) -> sparse.csr_matrix:
    """Equality constraints on the row and column sums of a row-major (num_rows, num_cols) plan;
    the last column-sum row is dropped (it is implied by the others and the total)."""
    row_sums = sparse.kron(sparse.identity(num_rows), sparse.csr_matrix(np.ones((1, num_cols))), format="csr")
    col_sums = sparse.kron(sparse.csr_matrix(np.ones((1, num_rows))), sparse.identity(num_cols), format="csr")
    return sparse.vstack([row_sums, col_sums[:-1]], format="csr")


def certificate(solution: LPSolution) -> Certificate:
    """Check optimality from first principles: strong duality, dual feasibility, complementary slackness."""
    x, y, c, a, b = solution.x, solution.duals, solution.cost, solution.a_eq, solution.b_eq
    reduced = c - a.T @ y  # >= 0 for a feasible dual of min c^T x, A x = b, x >= 0
    return Certificate(
        duality_gap=abs(float(c @ x) - float(b @ y)),
        dual_infeasibility=float(max(0.0, -reduced.min())),
        complementary_slackness=float(np.max(np.abs(reduced) * x)),
        primal_infeasibility=float(max(np.abs(a @ x - b).max(), max(0.0, -x.min()))),
    )


def transport_lp(target_probs, draft_probs) -> LPSolution:
    """(F5) on a sparse V^2-variable LP; ``optimum`` is beta.  V <= 1000."""
    target, draft = normalized_pair(target_probs, draft_probs)
    vocab = target.size
    if vocab > MAX_LP_VOCAB:
        raise ValueError(f"V={vocab} is too large for the V^2 LP (at most {MAX_LP_VOCAB}); use the closed form")
    # Rows: the output (row sums = target); columns: the draft (column sums = draft).
    return _solve(-np.eye(vocab).ravel(), _two_marginals(vocab, vocab), np.r_[target, draft[:-1]])


def multidraft_lp(target_probs, draft_probs, num_drafts: int) -> LPSolution:
    """(F7) the membership-cost OT for k i.i.d. drafts; V^(k+1) variables (at most 200,000)."""
    k = as_int("num_drafts", num_drafts, minimum=1, maximum=1_000_000)  # as multidraft_optimum
    target, draft = normalized_pair(target_probs, draft_probs)
    vocab = target.size
    if vocab ** (k + 1) > MAX_LP_VARIABLES:
        raise ValueError(f"V^(k+1) = {vocab}^{k + 1} variables is too large for the full LP (at most {MAX_LP_VARIABLES})")
    tuples = list(itertools.product(range(vocab), repeat=k))
    joint_draft = np.array([np.prod(draft[list(t)]) for t in tuples])  # Q(xbar), i.i.d.
    reward = np.array([[1.0 if y in t else 0.0 for y in range(vocab)] for t in tuples]).ravel()
    # Rows: the draft tuples (row sums = Q); columns: the output (column sums = target).
    return _solve(-reward, _two_marginals(len(tuples), vocab), np.r_[joint_draft, target[:-1]])


def flow_lp(target_probs, draft_probs, num_drafts: int) -> float:
    """(F8) bipartite max-flow between sets S of distinct drafts and tokens; returns alpha*_k.

    Q(S) = P(the set of distinct drafts is S) = sum_{T subset S} (-1)^{|S|-|T|} q(T)^k.
    """
    k = as_int("num_drafts", num_drafts, minimum=1, maximum=1_000_000)  # as multidraft_optimum
    target, draft = normalized_pair(target_probs, draft_probs)
    vocab = target.size
    if vocab > MAX_FLOW_VOCAB:
        raise ValueError(f"V={vocab} is too large for the subset-enumerating flow LP (at most {MAX_FLOW_VOCAB})")
    sets = [s for size in range(1, min(k, vocab) + 1) for s in itertools.combinations(range(vocab), size)]
    set_mass = []
    for s in sets:
        mass = sum((-1) ** (len(s) - r) * draft[list(t)].sum() ** k for r in range(1, len(s) + 1) for t in itertools.combinations(s, r))
        set_mass.append(max(mass, 0.0))
    edges = [(i, y) for i, s in enumerate(sets) for y in s]  # variable a(S, y)
    rows, cols = [], []
    for e, (i, y) in enumerate(edges):
        rows += [i, len(sets) + y]
        cols += [e, e]
    a_ub = sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(sets) + vocab, len(edges)))
    res = optimize.linprog(-np.ones(len(edges)), A_ub=a_ub, b_ub=np.r_[set_mass, target], bounds=(0, None), method="highs", options=HIGHS_OPTIONS)
    if res.status != 0:
        raise RuntimeError(f"HiGHS did not solve the flow LP: status {res.status}, {res.message}")
    return -float(res.fun)
