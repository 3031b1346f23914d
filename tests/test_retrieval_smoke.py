"""A smoke run of the retrieval benchmark on a few LongMemEval oracle questions: recall, not time.

The data is licensed separately and never copied into the project: it is read in place from
$MEMVM_BENCH_DATA, else ../shared/bench beside the project, and the test skips without it.
"""

import os
from argparse import Namespace
from pathlib import Path

import pytest

from tests.bench.retrieval import Question, measure, score, summarise

pytestmark = pytest.mark.anyio

DATA = Path(os.environ.get("MEMVM_BENCH_DATA", Path(__file__).resolve().parents[2] / "shared" / "bench"))
ORACLE = DATA / "longmemeval_oracle_dev.json.gz"


@pytest.mark.skipif(not ORACLE.exists(), reason="the LongMemEval oracle file is not on this machine")
async def test_search_finds_the_evidence_of_oracle_questions():
    scores, _ = await measure(
        Namespace(dataset="longmemeval", data=str(ORACLE), limit=15, via="engine", db_url=None, turns="all")
    )
    overall = summarise([score for score in scores["fused"] if not score.reported_apart])
    # 15 oracle haystacks (every page embedded) measured .845 R@10 and .729 MRR fused, .821 and
    # .738 by words alone; a drop below these bounds is a retrieval regression.
    assert overall["n"] >= 12
    assert overall["R@10"] >= 0.8 and overall["MRR"] >= 0.6


def test_session_recall_all_needs_every_evidence_session_among_the_first_k_sessions():
    question = Question("q", {"s1:3", "s4:2"}, "multi-session", False, sessions={"s1", "s4"})
    # Turns of s2 repeat: the sessions in order are s2, s1, s3, s5, s6, s7, s4, ...
    ranked = ["s2:0", "s2:1", "s1:3", "s2:5", "s3:0", None, "s5:1", "s6:0", "s7:0", "s4:2", "s8:0"]
    found = score(question, ranked, 1.0)
    assert found.sessions_all == {5: 0.0, 10: 1.0}
    assert found.recall[10] == 1.0 and found.recall[5] == 0.5
    assert score(question, ranked[:5], 1.0).sessions_all == {5: 0.0, 10: 0.0}
