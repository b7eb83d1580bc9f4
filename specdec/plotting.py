"""Plots (matplotlib, the ``plot`` extra): the optimal transport plan and the acceptance of each scheme."""

from __future__ import annotations


def plot_schemes(target, draft, rows: list[dict], path: str) -> None:
    """The optimal plan Pi* (F6) beside bars of acceptance per scheme with their optimum alpha*_k."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .laws.transport import optimal_plan

    plan = optimal_plan(target, draft).numpy()
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5))
    image = left.imshow(plan, cmap="viridis")
    left.set_title("optimal plan Pi* (F6)", fontsize=10)
    if plan.shape[0] <= 20:
        left.set_xticks(range(plan.shape[0]))
        left.set_yticks(range(plan.shape[0]))
    left.set_xlabel("draft token (~ draft)")
    left.set_ylabel("output token (~ target)")
    fig.colorbar(image, ax=left, fraction=0.046)
    per_position = [r for r in rows if "chain" not in r["scheme"]]
    labels = [f"{r['scheme']}\nk={r['size']}" for r in per_position]
    right.bar(range(len(per_position)), [r["value"] for r in per_position], color="tab:blue", label="scheme")
    right.scatter(
        [i for i, r in enumerate(per_position) if r["optimum"] is not None],
        [r["optimum"] for r in per_position if r["optimum"] is not None],
        color="tab:red", marker="_", s=400, label="optimum alpha*_k",
    )
    right.set_xticks(range(len(per_position)), labels, fontsize=7)
    right.set_ylim(0, 1.05)
    right.set_title("acceptance per position")
    right.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
