"""Retrieval benchmark: are a question's evidence turns among the top k pages search_pages returns?

    python tests/bench/retrieval.py --dataset locomo --data PATH/locomo_dev.json [--out FILE] [--limit N]
    python tests/bench/retrieval.py --dataset longmemeval --data PATH/longmemeval_s_dev.json.gz [--turns user]
    python tests/bench/retrieval.py --dataset paraphrase [--data tests/bench/data/paraphrase_dev.json]

Every turn is one page, written through memvm's own ingest path (speaker as the message name),
into a fresh database per conversation (LoCoMo) or per question haystack (LongMemEval), at the
date the dataset gives its session; each question is asked at its own date (LongMemEval) or a day
after the last session (LoCoMo), on the engine's clock (through MCP, at the server's own time). Each
question is one search; R@k is the share of its evidence turns in the top k, MRR uses the first
evidence turn in the top 100. `--via engine` (the default) calls the engine in process; `--via mcp`
does the same through the official MCP client and the ingest and search_pages tools, whose limit
of 50 results bounds MRR at rank 50 there (R@k is unaffected). LoCoMo category 5 and LongMemEval `_abs`
questions are reported apart, not in "overall". The data is read from where it lives; it is never
copied into the project. `--db-url postgresql://...` runs it on PostgreSQL instead of SQLite files:
a fresh database on that server per conversation or haystack (`--db-url auto`: on a throwaway
server started on loopback). LongMemEval indexes every turn by default; `--turns user` indexes only the
user's, its official protocol, and adds its own metric: recall_all@k over sessions (the ranked turns'
sessions, each counted once where it first appears; 1 when every evidence session is among the
first k).

Search matches words and meaning (the sentence encoder; every page is embedded before the
questions are asked). In process, each question's ranking is also taken by words alone (the
search with meaning off) and by meaning alone (the nearest vectors), and the three are reported
side by side: `lexical`, `semantic` and `fused` (what search_pages returns), with `rrf` beside
them as a baseline: the simple fusion of the first two, reciprocal-rank fusion (each page scores
1/(60 + its rank) in each list; Cormack et al., 2009). `--dataset paraphrase`
is the project's own set of facts asked for in words they do not contain, among distractors
(tests/bench/data/paraphrase_dev.json; paraphrase_everyday.json beside it is a second one, whose
distractors were not written to share the questions' words, and paraphrase_check.json a third, which
the fusion's tuning never reads): one page per fact and distractor, in one namespace.
"""

import argparse
import gzip
import json
import re
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

import anyio
from mcp import Client
from memvm.engine import Engine
from memvm.engine.models.pages import Role
from memvm.engine.models.writes import IngestMessage
from memvm.engine.paging.search import WORDS_ONLY, search_pages
from memvm.server.app import build_server
from memvm.server.settings import ServerSettings, ToolProfile

NS = "bench"
KS = (1, 5, 10)
SESSION_KS = (5, 10)
MCP_DEPTH = 50  # search_pages returns at most 50 results
LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
DEPTH = 100
MODES = ("lexical", "semantic", "fused", "rrf")
RRF_K = 60  # reciprocal-rank fusion's constant, as its authors set it
PARAPHRASE = Path(__file__).parent / "data" / "paraphrase_dev.json"
_EVIDENCE_ID = re.compile(r"D\d+:\d+")


@dataclass
class Haystack:
    """One namespace's worth of turns, and the questions asked of it."""

    name: str
    sessions: list[
        tuple[str, list[tuple[str, Role, str, str]]]
    ]  # (session, [(turn id, role, speaker, text)])
    questions: list["Question"] = field(default_factory=list)
    # When each session was held (seconds since the epoch), where the data says.
    dates: dict[str, float] = field(default_factory=dict)


@dataclass
class Question:
    text: str
    evidence: set[str]
    category: str
    reported_apart: bool
    # The sessions holding the evidence, for LongMemEval's session-level recall_all@k.
    sessions: set[str] = field(default_factory=set)
    # When the question is asked (LongMemEval's question date; after LoCoMo's last session).
    asked_at: float | None = None


def locomo(path: Path) -> Iterator[Haystack]:
    for sample in json.loads(path.read_text(encoding="utf-8")):
        conversation = sample["conversation"]
        first = conversation["speaker_a"]
        sessions = []
        known: set[str] = set()
        numbers = sorted(int(key.split("_")[1]) for key in conversation if re.fullmatch(r"session_\d+", key))
        for number in numbers:
            turns = []
            for turn in conversation[f"session_{number}"]:
                text = turn["text"] + (
                    f" [shares {turn['blip_caption']}]" if turn.get("blip_caption") else ""
                )
                role = Role.USER if turn["speaker"] == first else Role.ASSISTANT
                turns.append((turn["dia_id"], role, turn["speaker"], text))
                known.add(turn["dia_id"])
            sessions.append((f"session_{number}", turns))
        dates = {
            f"session_{number}": _locomo_date(conversation[f"session_{number}_date_time"])
            for number in numbers
            if conversation.get(f"session_{number}_date_time")
        }
        haystack = Haystack(name=sample["sample_id"], sessions=sessions, dates=dates)
        after = max(dates.values()) + 86_400 if dates else None
        for qa in sample["qa"]:
            evidence = {
                found for item in qa.get("evidence", []) for found in _EVIDENCE_ID.findall(item)
            } & known
            if evidence:
                number = int(qa["category"])
                category = f"{number} {LOCOMO_CATEGORIES.get(number, 'other')}"
                haystack.questions.append(
                    Question(qa["question"], evidence, category, number == 5, asked_at=after)
                )
        yield haystack


def longmemeval(path: Path, user_turns_only: bool = False) -> Iterator[Haystack]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        items = json.load(handle)
    for item in items:
        sessions = []
        evidence = set()
        for session_id, turns in zip(item["haystack_session_ids"], item["haystack_sessions"], strict=True):
            rows = []
            for index, turn in enumerate(turns):
                if user_turns_only and turn["role"] != "user":
                    continue
                turn_id = f"{session_id}:{index}"
                role = Role.USER if turn["role"] == "user" else Role.ASSISTANT
                rows.append((turn_id, role, turn["role"], turn["content"]))
                if turn.get("has_answer"):
                    evidence.add(turn_id)
            sessions.append((session_id, rows))
        dates = {
            session_id: _longmemeval_date(date)
            for session_id, date in zip(item["haystack_session_ids"], item["haystack_dates"], strict=True)
        }
        haystack = Haystack(name=item["question_id"], sessions=sessions, dates=dates)
        if evidence:
            abstention = item["question_id"].endswith("_abs")
            haystack.questions.append(
                Question(
                    item["question"],
                    evidence,
                    item["question_type"],
                    abstention,
                    sessions=set(item.get("answer_session_ids") or []),
                    asked_at=_longmemeval_date(item["question_date"]),
                )
            )
        yield haystack


def paraphrase(path: Path) -> Iterator[Haystack]:
    """The paraphrase set: every fact and distractor a page of one conversation; each question's
    evidence is its fact."""
    data = json.loads(path.read_text(encoding="utf-8"))
    turns = [(fact["id"], Role.USER, "user", fact["text"]) for fact in data["facts"]]
    turns += [(f"d{index}", Role.USER, "user", text) for index, text in enumerate(data["distractors"])]
    haystack = Haystack(name="paraphrase", sessions=[("notes", turns)])
    for fact in data["facts"]:
        for question in fact["questions"]:
            haystack.questions.append(Question(question, {fact["id"]}, "paraphrase", False))
    yield haystack


def _locomo_date(text: str) -> float:
    """LoCoMo's "1:56 pm on 8 May, 2023", local time."""
    return datetime.strptime(text, "%I:%M %p on %d %B, %Y").timestamp()


def _longmemeval_date(text: str) -> float:
    """LongMemEval's "2023/05/20 (Sat) 07:47", local time."""
    return datetime.strptime(re.sub(r"\s*\(\w+\)", "", text), "%Y/%m/%d %H:%M").timestamp()


class BenchClock:
    """The engine's clock, set to when each session was held and each question asked."""

    def __init__(self) -> None:
        self.at = time.time()

    def now(self) -> float:
        return self.at


@dataclass
class Score:
    category: str
    reported_apart: bool
    recall: dict[int, float]
    reciprocal_rank: float
    millis: float
    # LongMemEval's recall_all@k over sessions (see the module's note); empty for LoCoMo.
    sessions_all: dict[int, float] = field(default_factory=dict)


class Memory(Protocol):
    """The two operations the benchmark needs, in process or through MCP."""

    async def ingest(
        self, session: str, turns: list[tuple[str, Role, str, str]], at: float | None = None
    ) -> list[str]: ...

    async def embedded(self) -> None:
        """Once every page ingested has its vector."""

    async def search(self, text: str, at: float | None = None) -> tuple[dict[str, list[str]], float]:
        """The page ids found for `text`, best first, by mode (MODES; through MCP only fused),
        and the milliseconds the fused search took (search_pages', as a client waits for it)."""


class EngineMemory:
    """The engine in process; `at` sets its clock (when a session was held, a question asked)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def _at(self, at: float | None) -> None:
        if at is not None and isinstance(self.engine.clock, BenchClock):
            self.engine.clock.at = at

    async def ingest(
        self, session: str, turns: list[tuple[str, Role, str, str]], at: float | None = None
    ) -> list[str]:
        self._at(at)
        messages = [
            IngestMessage(role=role, content=text or " ", name=speaker[:64])
            for _, role, speaker, text in turns
        ]
        return (await self.engine.session(NS, session).ingest(messages=messages)).page_ids

    async def embedded(self) -> None:
        await self.engine.embed_waiting()

    async def search(self, text: str, at: float | None = None) -> tuple[dict[str, list[str]], float]:
        self._at(at)
        started = time.perf_counter()
        fused = await self.engine.session(NS, "bench").search(query=text, limit=DEPTH)
        millis = (time.perf_counter() - started) * 1000
        engine = self.engine
        async with engine.db.read(NS) as conn:
            lexical = await search_pages(
                conn,
                namespace=NS,
                viewer_session="bench",
                query=text,
                limit=DEPTH,
                stemmer=engine.stemmer,
                tuning=engine.config.search,
                meaning=WORDS_ONLY,
            )
            semantic = await self._nearest(conn, text)
        by_words = [hit.page_id for hit in lexical.results]
        return {
            "lexical": by_words,
            "semantic": semantic,
            "fused": [hit.page_id for hit in fused.results],
            "rrf": reciprocal_rank_fusion(by_words, semantic),
        }, millis

    async def _nearest(self, conn: Any, text: str) -> list[str]:
        vector = await self.engine.meaning.query_vector(text)
        if vector is None:
            return []
        near = await self.engine.meaning.index.nearest(conn, NS, vector, DEPTH)
        rowids = sorted(near, key=lambda rowid: -near[rowid])
        ids = {row[0]: row[1] for row in await conn.all("SELECT rowid, page_id FROM pages")}
        return [ids[rowid] for rowid in rowids if rowid in ids]


def reciprocal_rank_fusion(*rankings: list[str]) -> list[str]:
    """The baseline fusion: each page scores 1 / (RRF_K + its rank) in each ranking it is in."""
    scores: dict[str, float] = defaultdict(float)
    for ranking in rankings:
        for rank, page_id in enumerate(ranking, 1):
            scores[page_id] += 1 / (RRF_K + rank)
    return sorted(scores, key=lambda page_id: -scores[page_id])[:DEPTH]


class ClientMemory:
    """The server through the MCP client, on the server's own clock (`at` is not sent)."""

    def __init__(self, client: Client, db: Path | str) -> None:
        self.client = client
        self.db = db

    async def ingest(
        self, session: str, turns: list[tuple[str, Role, str, str]], at: float | None = None
    ) -> list[str]:
        messages = [
            {"role": role.value, "content": text or " ", "name": speaker[:64]}
            for _, role, speaker, text in turns
        ]
        return list((await self._call("ingest", messages=messages, session=session))["page_ids"])

    async def embedded(self) -> None:
        # The server embeds in the background; another engine on the database finishes it now.
        engine = await Engine.open(self.db)
        try:
            await engine.embed_waiting()
        finally:
            await engine.close()

    async def search(self, text: str, at: float | None = None) -> tuple[dict[str, list[str]], float]:
        started = time.perf_counter()
        found = await self._call("search_pages", query=text, limit=MCP_DEPTH, session="bench")
        millis = (time.perf_counter() - started) * 1000
        return {"fused": [hit["page_id"] for hit in found["results"]]}, millis

    async def _call(self, name: str, /, **arguments: Any) -> dict[str, Any]:
        result = await self.client.call_tool(name, arguments)
        if result.is_error:
            raise RuntimeError(f"{name} failed: {result.content[0].text}")
        return dict(result.structured_content or {})


@asynccontextmanager
async def open_memory(via: str, db: Path | str) -> AsyncIterator[Memory]:
    """A fresh memory on `db`: the engine itself, or a server reached through the MCP client."""
    if via == "engine":
        engine = await Engine.open(db, clock=BenchClock())
        try:
            yield EngineMemory(engine)
        finally:
            await engine.close()
        return
    server = build_server(ServerSettings(db=str(db), tools=ToolProfile.ALL, namespace=NS))
    async with Client(server) as client:
        yield ClientMemory(client, db)


async def ingest_haystack(memory: Memory, haystack: Haystack) -> dict[str, str]:
    """Every turn of the haystack as a page; returns page id -> turn id."""
    page_of: dict[str, str] = {}
    for session, turns in haystack.sessions:
        if not turns:
            continue
        page_ids = await memory.ingest(_session_name(session), turns, haystack.dates.get(session))
        page_of.update({page_id: turn_id for (turn_id, *_), page_id in zip(turns, page_ids, strict=True)})
    return page_of


def score(question: Question, ranked: list[str | None], millis: float) -> Score:
    """R@k and the reciprocal rank of one question, from the turn ids of its results in order."""
    recall = {k: len(question.evidence & set(ranked[:k])) / len(question.evidence) for k in KS}
    first = next((rank for rank, turn in enumerate(ranked, 1) if turn in question.evidence), None)
    sessions_all = {}
    if question.sessions:
        sessions = list(dict.fromkeys(turn.rsplit(":", 1)[0] for turn in ranked if turn is not None))
        sessions_all = {k: float(question.sessions <= set(sessions[:k])) for k in SESSION_KS}
    return Score(
        question.category, question.reported_apart, recall, 1 / first if first else 0.0, millis, sessions_all
    )


async def run_haystack(memory: Memory, haystack: Haystack) -> dict[str, list[Score]]:
    """Each question's scores by mode, each with the fused search's time."""
    page_of = await ingest_haystack(memory, haystack)
    await memory.embedded()
    scores: dict[str, list[Score]] = defaultdict(list)
    for question in haystack.questions:
        ranked, millis = await memory.search(question.text, question.asked_at)
        for mode, page_ids in ranked.items():
            scores[mode].append(score(question, [page_of.get(page_id) for page_id in page_ids], millis))
    return scores


def _session_name(session: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.:-]", "_", session)[:64] or "s"


def summarise(scores: list[Score]) -> dict[str, Any]:
    times = sorted(score.millis for score in scores)
    sessions = [s.sessions_all for s in scores if s.sessions_all]
    return {
        "n": len(scores),
        **{f"R@{k}": round(statistics.fmean(s.recall[k] for s in scores), 3) for k in KS},
        "MRR": round(statistics.fmean(s.reciprocal_rank for s in scores), 3),
        **{
            f"sessions_all@{k}": round(statistics.fmean(s[k] for s in sessions), 3)
            for k in SESSION_KS
            if sessions
        },
        "p50_ms": round(times[len(times) // 2], 2),
        "p95_ms": round(times[max(0, int(len(times) * 0.95) - 1)], 2),
    }


def report(dataset: str, scores: list[Score], elapsed: float) -> dict[str, Any]:
    counted = [s for s in scores if not s.reported_apart]
    by_category: defaultdict[str, list[Score]] = defaultdict(list)
    for score in scores:
        by_category[score.category + (" (apart)" if score.reported_apart else "")].append(score)
    result = {
        "dataset": dataset,
        "overall": summarise(counted),
        "categories": {name: summarise(group) for name, group in sorted(by_category.items())},
        "seconds": round(elapsed, 1),
    }
    by_session = "sessions_all@5" in result["overall"]
    extra = f" {'S-all@5':>8} {'S-all@10':>8}" if by_session else ""
    print(
        f"{'set':<34} {'n':>5} {'R@1':>6} {'R@5':>6} {'R@10':>6} {'MRR':>6} {'p50 ms':>8} {'p95 ms':>8}{extra}"
    )
    for name, row in [("overall", result["overall"]), *result["categories"].items()]:
        sessions = f" {row['sessions_all@5']:>8.3f} {row['sessions_all@10']:>8.3f}" if by_session else ""
        print(
            f"{name:<34} {row['n']:>5} {row['R@1']:>6.3f} {row['R@5']:>6.3f} {row['R@10']:>6.3f} "
            f"{row['MRR']:>6.3f} {row['p50_ms']:>8.2f} {row['p95_ms']:>8.2f}{sessions}"
        )
    return result


def side_by_side(scores: dict[str, list[Score]]) -> dict[str, dict[str, Any]]:
    """Words alone, meaning alone, both fused, and the baseline fusion, over the questions counted,
    printed and returned."""
    modes = {
        mode: summarise([s for s in scores[mode] if not s.reported_apart]) for mode in MODES if mode in scores
    }
    print(f"\n{'by what matched':<34} {'n':>5} {'R@1':>6} {'R@5':>6} {'R@10':>6} {'MRR':>6}")
    for mode, row in modes.items():
        print(
            f"{mode:<34} {row['n']:>5} {row['R@1']:>6.3f} {row['R@5']:>6.3f} {row['R@10']:>6.3f} {row['MRR']:>6.3f}"
        )
    return modes


def plot(result: dict[str, Any], path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(no plot: install the bench extra, pip install -e '.[bench]')")
        return
    names = ["overall", *result["categories"]]
    rows = [result["overall"], *result["categories"].values()]
    figure, axes = plt.subplots(figsize=(max(6, len(names) * 1.1), 4))
    width = 0.25
    for offset, k in enumerate(KS):
        axes.bar(
            [i + (offset - 1) * width for i in range(len(names))],
            [row[f"R@{k}"] for row in rows],
            width,
            label=f"R@{k}",
        )
    axes.set_xticks(range(len(names)), names, rotation=30, ha="right")
    axes.set_ylim(0, 1)
    axes.set_title(f"memvm search_pages recall, {result['dataset']}")
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    print(f"plot: {path}")


async def measure(arguments: argparse.Namespace) -> tuple[dict[str, list[Score]], float]:
    """Every question's scores by mode (MODES in process, fused alone through MCP), and the seconds."""
    if arguments.dataset == "locomo":
        haystacks = list(locomo(Path(arguments.data)))
    elif arguments.dataset == "paraphrase":
        haystacks = list(paraphrase(Path(arguments.data or PARAPHRASE)))
    else:
        haystacks = list(longmemeval(Path(arguments.data), user_turns_only=arguments.turns == "user"))
    haystacks = haystacks[: arguments.limit or None]
    started = time.perf_counter()
    scores: dict[str, list[Score]] = defaultdict(list)
    databases = None
    if arguments.db_url:
        from fresh_postgres import Databases

        databases = Databases(None if arguments.db_url == "auto" else arguments.db_url)
    try:
        with tempfile.TemporaryDirectory(prefix="memvm-retrieval-") as scratch:
            for index, haystack in enumerate(haystacks):
                target = databases.fresh() if databases else Path(scratch) / f"haystack-{index}.db"
                async with open_memory(arguments.via, target) as memory:
                    for mode, found in (await run_haystack(memory, haystack)).items():
                        scores[mode].extend(found)
    finally:
        if databases is not None:
            databases.close()
    return scores, time.perf_counter() - started


def main(argv: list[str]) -> None:
    arguments = parse(argv)
    if arguments.data is None and arguments.dataset != "paraphrase":
        raise SystemExit(f"--data is required for {arguments.dataset}")
    scores, elapsed = anyio.run(measure, arguments)
    backend = "postgresql" if arguments.db_url else "sqlite"
    turns = " (user turns)" if arguments.turns == "user" else ""
    result = report(f"{arguments.dataset}{turns} via {arguments.via} on {backend}", scores["fused"], elapsed)
    result["modes"] = side_by_side(scores)
    name = arguments.dataset + ("-user-turns" if arguments.turns == "user" else "")
    out = Path(arguments.out or Path(__file__).parent / "out" / f"retrieval-{name}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1), encoding="utf-8")
    plot(result, out.with_suffix(".png"))
    overall = result["overall"]
    sessions = "".join(
        f" sessions_all@{k}={overall[f'sessions_all@{k}']:.3f}"
        for k in SESSION_KS
        if f"sessions_all@{k}" in overall
    )
    print(
        f"overall R@5={overall['R@5']:.3f} R@10={overall['R@10']:.3f} MRR={overall['MRR']:.3f}{sessions} "
        f"p95_ms={overall['p95_ms']:.2f} n={overall['n']}"
    )


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", choices=["locomo", "longmemeval", "paraphrase"], required=True)
    parser.add_argument(
        "--data", help="path to the dataset file (read in place); the paraphrase set's is the project's own"
    )
    parser.add_argument(
        "--out",
        help="JSON result file (default tests/bench/out/retrieval-<dataset>.json); the plot beside it",
    )
    parser.add_argument("--limit", type=int, default=0, help="only the first N conversations or haystacks")
    parser.add_argument(
        "--turns",
        choices=["all", "user"],
        default="all",
        help="LongMemEval: index every turn, or only the user's (its official protocol)",
    )
    parser.add_argument(
        "--via", choices=["engine", "mcp"], default="engine", help="in process, or through the MCP client"
    )
    parser.add_argument(
        "--db-url",
        help="run on PostgreSQL: a server's URL (a fresh database per conversation), or 'auto' for a throwaway one",
    )
    return parser.parse_args(argv)


if __name__ == "__main__":
    main(sys.argv[1:])
