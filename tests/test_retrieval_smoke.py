"""A smoke run of the retrieval benchmark on a few LongMemEval oracle questions: recall, not time.

The data is licensed separately and never copied into the project: it is read in place from
$MEMVM_BENCH_DATA, else ../shared/bench beside the project, and the test skips without it.
"""

import os
from argparse import Namespace
from pathlib import Path

import pytest

from tests.bench.retrieval import measure, summarise

pytestmark = pytest.mark.anyio

DATA = Path(os.environ.get("MEMVM_BENCH_DATA", Path(__file__).resolve().parents[2] / "shared" / "bench"))
ORACLE = DATA / "longmemeval_oracle_dev.json.gz"


@pytest.mark.skipif(not ORACLE.exists(), reason="the LongMemEval oracle file is not on this machine")
async def test_search_finds_the_evidence_of_oracle_questions():
    scores, _ = await measure(
        Namespace(dataset="longmemeval", data=str(ORACLE), limit=30, via="engine", db_url=None)
    )
    overall = summarise([score for score in scores if not score.reported_apart])
    # 30 oracle haystacks measured .868 R@10; a drop below these bounds is a retrieval regression.
    assert overall["n"] >= 25
    assert overall["R@10"] >= 0.8 and overall["MRR"] >= 0.6
