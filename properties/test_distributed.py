"""A campaign split across processes (torch.distributed, gloo on CPU) reports exactly what one
process reports for the same seed, chunk size and total n: ranks draw disjoint counter-seeded chunks
and the engine tests the summed counts once."""

import json
import socket

import pytest
import torch.distributed as dist
import torch.multiprocessing as mp

import specdec as sd
from specdec.conformance import catalogue

SETTINGS = dict(n=30_000, chunk_size=4_000, seed=7, device="cpu")


def campaign():
    return sd.check_verifier(sd.verify_tokens, cases=catalogue.token_cases()[:3], chains=catalogue.chain_cases()[:1], **SETTINGS)


def summary(report):
    return [(c.name, c.n, c.statistic, c.pvalue, c.passed) for c in report.checks]


def _rank(rank: int, world: int, port: int, path: str) -> None:
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        report = campaign()
        with open(f"{path}.{rank}", "w") as handle:
            json.dump({"checks": summary(report), "samples": report.samples}, handle)
    finally:
        dist.destroy_process_group()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.skipif(not dist.is_available(), reason="torch.distributed is not available in this build")
def test_two_gloo_ranks_report_what_one_process_reports(tmp_path):
    path = str(tmp_path / "report")
    mp.spawn(_rank, args=(2, _free_port(), path), nprocs=2, join=True)
    single = campaign()
    for rank in (0, 1):
        sharded = json.loads(open(f"{path}.{rank}").read())
        assert sharded["samples"] == single.samples
        assert [tuple(c) for c in sharded["checks"]] == summary(single), f"rank {rank} differs from the single-process report"
