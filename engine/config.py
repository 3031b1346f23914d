"""Engine settings, passed in at open time: frozen dataclasses (the engine's, its search tuning, its
guards'), so that nothing changes them while the engine runs.

Plain dataclasses, not pydantic models: every path reads them, a hook answered in its own process
too, and importing pydantic is the largest part of that process's start (docs/performance.md).
Each limit sits beside its field (`within`) and is checked whenever settings are made; what comes
from outside is read by the edge that reads it (the command line by `memvm serve`, a guard
settings file by load_guard_config).
"""

from dataclasses import dataclass, field
from enum import StrEnum

from memvm.engine.guard_config import GuardConfig
from memvm.engine.settings_limits import UnusableSettings, check_limits, within


class Synchronous(StrEnum):
    """SQLite's `synchronous` setting. FULL survives power loss; NORMAL may lose the last commits."""

    FULL = "FULL"
    NORMAL = "NORMAL"


@dataclass(frozen=True, kw_only=True)
class SearchTuning:
    """How search_pages scores its matches; each idea can be switched off (0) on its own.

    The defaults were chosen with tests/bench/retrieval_ideas.py on the development data of two
    public memory benchmarks (LoCoMo and LongMemEval_S), cross-validated: an idea is on only if,
    chosen on four folds of the data, it raised recall on the fifth of one dataset and lowered it
    on neither. BM25's constants and the second round are there to be measured that way; the
    second round raised LoCoMo's held-out recall and lowered LongMemEval's, so it is off.
    """

    # BM25 matches re-scored: every bonus below reorders within these.
    depth: int = within(100, low=10, high=1_000)
    # Evidence often sits beside the best-matching turn (a question answered in the next message):
    # a match gains this share of the BM25 scores of matches up to `neighbour_reach` turns away in
    # its session, times `neighbour_decay` for each further step. A short turn ("Yes, twice!") means
    # little alone, a long one stands on its own: pages longer than `context_tokens` take a share of
    # the bonus that shrinks with their length.
    neighbour_weight: float = within(0.3, low=0.0, high=2.0)
    neighbour_reach: int = within(2, low=1, high=4)
    neighbour_decay: float = within(0.5, low=0.0, high=1.0)
    context_tokens: int = within(60, low=1, high=100_000)
    # A page said by someone the query names ("What did Caroline paint?") scores this much more,
    # as a share of its score. BM25 alone cannot do it: in a two-person conversation a name is on
    # half the pages, so its inverse document frequency is about zero.
    speaker_boost: float = within(1.0, low=0.0, high=5.0)
    # Pronouns name speakers too: a query in the first person ("my", "I") asks about what the user
    # said, one in the second person ("you mentioned") about what the assistant said. The pages of
    # that role score this much more; a query with both, or neither, boosts no role.
    role_boost: float = within(1.0, low=0.0, high=5.0)
    # A match gains this share of the best BM25 score in its session: conversations are about one
    # thing at a time, and a session that matches well holds more of what was asked.
    session_weight: float = within(0.5, low=0.0, high=2.0)
    # BM25's term-frequency saturation and length normalisation. k1 is below the usual 1.2:
    # every held-out fold of both datasets chose 0.9 (a word said twice in a turn counts less).
    bm25_k1: float = within(0.9, low=0.1, high=5.0)
    bm25_b: float = within(0.75, low=0.0, high=1.0)
    # A second round (pseudo-relevance feedback): the words that weigh most in the best
    # `feedback_pages` pages of the first round, `feedback_terms` of them, join the query at
    # `feedback_weight` of an asked word's weight. 0 pages: one round.
    feedback_pages: int = within(0, low=0, high=50)
    feedback_terms: int = within(10, low=1, high=50)
    feedback_weight: float = within(0.3, low=0.0, high=2.0)
    # A query that names a stretch of time counted back from now ("10 days ago", "last Tuesday":
    # paging/when.py) lifts the pages written in it by this share of their score.
    time_boost: float = within(0.0, low=0.0, high=5.0)
    # Search by meaning (engine/meaning; how the two kinds of evidence are fused: paging/fusion.py).
    # The `meaning_depth` pages nearest the query by meaning are its crowd; a page found by meaning
    # stands out of it by more than `meaning_threshold` standard deviations, and scores a weight for
    # each one past it: `meaning_weight` when the query's words match little, falling to
    # `meaning_weight_covered` as the best page's share of the query's words (its coverage) rises
    # from `covered_from` to `covered_at`. A page found by its words as well is raised by
    # `meaning_bonus` times its standing. Chosen by cross-validation (tests/bench/fusion_tuning.py).
    meaning_depth: int = within(100, low=10, high=1_000)
    meaning_threshold: float = within(3.0, low=0.0, high=10.0)
    # A query whose words barely match (coverage under `uncovered_below`) is one asked in other
    # words: there a page is found by meaning from `meaning_threshold_uncovered` standard
    # deviations, the threshold rising to `meaning_threshold` as the coverage reaches
    # `uncovered_until`.
    meaning_threshold_uncovered: float = within(2.25, low=0.0, high=10.0)
    uncovered_below: float = within(0.4, low=0.0, high=5.0)
    uncovered_until: float = within(0.6, low=0.0, high=5.0)
    meaning_weight: float = within(2.0, low=0.0, high=10.0)
    # Standing out is relative: whatever the query, its nearest page stands out of the crowd (by
    # about 3.5 deviations at the median for a prompt about nothing in the namespace). A page is
    # found by meaning only if its cosine is at least this, too, which the nearest page to an
    # unrelated prompt seldom reaches (all-MiniLM-L6-v2; tests/bench/meaning_precision.py).
    meaning_min_cosine: float = within(0.3, low=-1.0, high=1.0)
    meaning_weight_covered: float = within(0.0, low=0.0, high=10.0)
    covered_from: float = within(0.7, low=0.0, high=5.0)
    covered_at: float = within(1.0, low=0.0, high=5.0)
    meaning_bonus: float = within(0.05, low=0.0, high=2.0)
    # A page less than `meaning_threshold` but more than `meaning_floor` standard deviations nearer
    # than the crowd is listed after every other (nearest first): a query whose words find fewer
    # pages than asked for gets the nearest by meaning. At or above the threshold: none is.
    meaning_floor: float = within(1.0, low=0.0, high=10.0)

    def __post_init__(self) -> None:
        check_limits(self)


@dataclass(frozen=True, kw_only=True)
class EngineConfig:
    encoding: str = "o200k_base"
    budget_tokens: int = within(32_000, low=1_000, high=2_000_000)
    # Tokens set aside inside the budget for what is sent besides the pages: the rules and the
    # manifest. The server computes it from the renderers; see memvm.resources.budget.
    reserved_tokens: int = within(0, low=0)
    max_faults_per_turn: int = within(3, low=1, high=100)
    turn_idle_seconds: float = within(120.0, low=1.0)
    # Whether the host starts turns (begin_turn, ingest, a hook's prompt). A desktop host never
    # does: there only `turn_idle_seconds` without a call starts one, and that is all its model is
    # told about when the fault allowance comes back.
    turns_from_host: bool = True
    manifest_max_tokens: int = within(1_500, low=200, high=50_000)
    manifest_max_pages: int = within(40, low=1, high=1_000)
    abstract_max_tokens: int = within(48, low=8, high=512)
    reference_max_tokens: int = within(16, low=4, high=64)
    max_page_tokens: int = within(200_000, low=1_000)
    # A recorded tool result this long (or longer) is kept as a tool_result page.
    result_page_tokens: int = within(200, low=1, high=100_000)
    busy_timeout_ms: int = within(10_000, low=0)
    # Read transactions that run at once, each on its own connection (a thread each).
    read_connections: int = within(4, low=1, high=64)
    synchronous: Synchronous = Synchronous.FULL
    # A quota on the database file and its WAL together: past it, writes fail with "storage full"
    # (and nothing is half-written) while reads, forget and the freed space go on working. It binds
    # this process's writes only, as synchronous does. None: only the disk's.
    max_db_mb: int | None = within(None, low=1)
    # A quota on each namespace's page text, in MB of characters (see storage/namespace_quota.py):
    # a namespace past it has its writes refused while every other goes on. None: no quota.
    max_namespace_mb: int | None = within(None, low=1)
    # Open the file read-only (SQLite mode=ro): reads work, every write is the "read-only" tool
    # error, and a file that still needs a migration is refused at start.
    read_only: bool = False
    # Replace secret-shaped strings (provider keys, tokens, private keys, passwords in URLs) with
    # [REDACTED:kind] in everything stored (see redaction).
    redact_secrets: bool = True
    # Superseded versions kept per keyed page, newest first (0: a rewrite keeps none).
    versions_kept: int = within(20, low=0, high=1_000)
    # Search by meaning as well as by words (`--search lexical` turns it off), and where the
    # encoder's files are when not the installed ones (`--embedding-model DIR`; see
    # meaning/model_files.py).
    semantic_search: bool = True
    embedding_model: str | None = None
    guards: GuardConfig = field(default_factory=GuardConfig)
    search: SearchTuning = field(default_factory=SearchTuning)

    @property
    def page_budget(self) -> int:
        """Tokens left for page lines once the reserved part (rules, manifest) is set aside."""
        return self.budget_tokens - self.reserved_tokens

    @property
    def smallest_page_budget(self) -> int:
        """Room for one page line at level 3: its reference, and its role or type and id."""
        return self.reference_max_tokens + 16

    def __post_init__(self) -> None:
        check_limits(self)
        # A budget the reserve eats whole would start a server where nothing can ever be loaded
        # and every try costs a fault: refuse it, saying what would do.
        if self.page_budget < self.smallest_page_budget:
            raise UnusableSettings(
                f"a budget of {self.budget_tokens:,} tokens leaves {max(0, self.page_budget):,} for pages "
                f"once the {self.reserved_tokens:,} reserved for the rules and the manifest are set aside, "
                f"and one page needs {self.smallest_page_budget}: give at least "
                f"{self.reserved_tokens + self.smallest_page_budget:,} (the default is 32,000)"
            )
