"""Where the default product row's misses are, and what its candidate pool could give (``--misses``).

For every evidence turn that ``Memory.recall`` (the ``product`` row: ``Memory()``, every default)
did not inject, :func:`question_misses` says where it was lost, from what the recall itself
reports (:attr:`~langmem_plugin.Recall.considered`) and from the store's candidate lists asked
again for the recall's own query, the way recall asks them
(:class:`~langmem_plugin.core.candidates.CandidateQuery` under each searched namespace, the
retrieval's background-word rule, through the store's ``search_candidates``):

- ``not in pool``: neither the dense nor the lexical top-N of the default pool size
  (:attr:`~langmem_plugin.services.recall.RetrievalConfig.candidates`) holds it: a first-stage
  miss. The pool is asked again at each size of :data:`POOL_SIZES`, to show how many such
  misses a larger first stage would reach;
- ``ranked out``: in the pool, but fusion did not keep it among the
  :attr:`~langmem_plugin.RecallConfig.candidates` it hands to ranking, or it fell under the
  similarity threshold;
- ``cut: budget``: ranked, but the memories budget (or ``max_items``) was spent before it;
- ``cut: duplicate``: ranked, but dropped as a duplicate of a better ranked item (same text or
  passage) or as superseded.

A turn stored as several items (an episode and its passages) takes the furthest any of them got.
Every evidence turn has exactly one fate (:data:`FATES`, ``injected`` included), so the rows of
:meth:`MissTable.table` add up to 100 in each column.

The ceiling (:func:`oracle_share`): an oracle that knew the evidence, ranking the same default pool,
would put the evidence items first, cheapest first, each whole at its token count (the bench's
token model, the content as stored), until the budget is spent — at each budget of
:data:`ORACLE_BUDGETS`. It shows what better ranking and fitting could reach without a better first
stage. Recall's fitter shows a long item cut to its best window, which the oracle does not: where
evidence turns are long, recall can inject more of them than the oracle packs.

Every share is of evidence turns, averaged over questions (LoCoMo's evidence recall), so the
``injected`` row is the product row's recall.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from langmem_plugin.bench.report import format_table
from langmem_plugin.core.candidates import CandidateQuery, CandidateStore
from langmem_plugin.core.scope import Scope
from langmem_plugin.core.tokens import count_tokens
from langmem_plugin.errors import ConfigurationError, ScopeError
from langmem_plugin.services.layout import Compartment
from langmem_plugin.services.recall import RetrievalConfig

if TYPE_CHECKING:
    from langmem_plugin import Memory
    from langmem_plugin.bench.locomo.data import Question
    from langmem_plugin.services.recall import Recall

__all__ = [
    "FATES",
    "ORACLE_BUDGETS",
    "POOL_SIZES",
    "MissTable",
    "QuestionMisses",
    "oracle_share",
    "question_misses",
]

#: The candidate pool sizes (per signal, dense and lexical) a first-stage miss is checked at.
POOL_SIZES: tuple[int, ...] = (50, 200, 1000)
#: The token budgets of the oracle's ceiling.
ORACLE_BUDGETS: tuple[int, ...] = (300, 600, 1200)
#: What became of an evidence turn, one each: injected, or the stage where it was lost.
FATES: tuple[str, ...] = ("injected", "not in pool", "ranked out", "cut: budget", "cut: duplicate")
_STAGE = {"below threshold": "ranked out", "max items": "cut: budget", "over budget": "cut: budget"}
_STAGE |= {"duplicate": "cut: duplicate", "superseded": "cut: duplicate", "injected": "injected"}
_ORDER = {fate: n for n, fate in enumerate(("not in pool", "ranked out", "cut: duplicate", "cut: budget"))}

_Key = tuple[tuple[str, ...], str]


@dataclass(frozen=True)
class QuestionMisses:
    """One question's evidence turns: each one's fate, how many lay outside each pool size, and
    the oracle's share of them at each budget.

    Attributes:
        category: the question's category.
        fates: one of :data:`FATES` per evidence turn, in the question's order.
        outside: per size of :data:`POOL_SIZES`, how many evidence turns no candidate carried.
        oracle: per budget of :data:`ORACLE_BUDGETS`, the share (0 to 1) the oracle injects.
    """

    category: int
    fates: tuple[str, ...]
    outside: tuple[int, ...]
    oracle: tuple[float, ...]


@dataclass
class MissTable:
    """The misses of one set's product row, question by question, and how they print."""

    dataset: str
    categories: dict[int, str]
    questions: list[QuestionMisses] = field(default_factory=list)

    def _mean(self, values: Iterable[tuple[int, float]], category: int | None) -> float:
        kept = [v for c, v in values if category in (None, c)]
        return 100.0 * sum(kept) / len(kept) if kept else float("nan")

    def share(self, fate: str, category: int | None = None) -> float:
        """The percent of evidence turns whose fate is ``fate`` (mean over questions)."""
        return self._mean(
            ((q.category, q.fates.count(fate) / len(q.fates)) for q in self.questions), category
        )

    def outside_share(self, size: int, category: int | None = None) -> float:
        """The percent of evidence turns outside the pool of ``size`` candidates per signal."""
        i = POOL_SIZES.index(size)
        return self._mean(((q.category, q.outside[i] / len(q.fates)) for q in self.questions), category)

    def oracle_share(self, budget: int, category: int | None = None) -> float:
        """The percent of evidence turns the oracle injects at ``budget`` tokens."""
        i = ORACLE_BUDGETS.index(budget)
        return self._mean(((q.category, q.oracle[i]) for q in self.questions), category)

    def table(self) -> str:
        """Rows: each fate, the first stage at each pool size, the oracle at each budget; columns:
        the set's categories and overall."""
        columns = [*self.categories, None]
        first, *larger = POOL_SIZES
        labels = {
            "injected": "injected (the product row's recall)",
            "not in pool": f"missed: not in the pool @{first} (first stage)",
            "ranked out": f"missed: in the pool @{first}, ranked out",
            "cut: budget": "missed: ranked in, cut by the budget",
            "cut: duplicate": "missed: ranked in, cut as a duplicate",
        }
        rows: list[list[str]] = []
        for fate in FATES:
            rows.append([labels[fate], *(f"{self.share(fate, c):.1f}" for c in columns)])
            if fate == "not in pool":
                rows.extend(
                    [
                        f"  of which still not in the pool @{size}",
                        *(f"{self.outside_share(size, c):.1f}" for c in columns),
                    ]
                    for size in larger
                )
        rows.extend(
            [
                f"oracle ranking of the pool @{first}, {budget} tokens",
                *(f"{self.oracle_share(budget, c):.1f}" for c in columns),
            ]
            for budget in ORACLE_BUDGETS
        )
        headers = [
            "evidence turns, % (mean over questions)",
            *(f"{c} {n}" for c, n in self.categories.items()),
            "overall",
        ]
        missed = sum(len(q.fates) - q.fates.count("injected") for q in self.questions)
        total = sum(len(q.fates) for q in self.questions)
        note = (
            f"{self.dataset}, product row (Memory() defaults): {missed} of {total} evidence turns missed "
            f"over {len(self.questions)} questions; the fates add up to 100 in each column"
        )
        return "\n".join([note, format_table(headers, rows)])


def _turn_ids(
    memory: Memory,
    namespace: tuple[str, ...],
    key: str,
    value: Mapping[str, Any] | None,
    seen: dict[Any, set[str]],
) -> set[str]:
    """The turn ids a stored item carries (a passage: its episode's); ``seen`` caches them by
    ``(namespace, key)`` as the product row does."""
    if (namespace, key) in seen:
        return seen[(namespace, key)]
    if value is None:
        item = memory.store.get(namespace, key)
        value = {} if item is None else item.value
    meta = value.get("metadata") or {}
    parent = meta.get("episode")
    if parent and "message_ids" not in meta:
        ids = _turn_ids(memory, namespace, str(parent), None, seen)
    else:
        ids = set(str(meta.get("message_ids", "")).split())
    seen[(namespace, key)] = ids
    return ids


def oracle_share(evidence: Sequence[str], items: Iterable[tuple[int, Iterable[str]]], budget: int) -> float:
    """The share of ``evidence`` an oracle injects within ``budget`` tokens from ``items``.

    ``items`` are ``(tokens, turn ids)`` of the pool; those that carry evidence go first, cheapest
    first, each only when it adds a turn not yet covered, until one does not fit.

    >>> oracle_share(["a", "b"], [(5, ["a"]), (3, ["b"]), (1, ["z"])], 4)
    0.5
    >>> oracle_share(["a", "b"], [(5, ["a"]), (3, ["b"])], 8)
    1.0
    """
    wanted = set(evidence)
    useful = sorted(
        ((tokens, sorted(set(ids) & wanted)) for tokens, ids in items if wanted.intersection(ids)),
        key=lambda x: (x[0], x[1]),
    )
    covered: set[str] = set()
    used = 0
    for tokens, ids in useful:
        if covered.issuperset(ids):
            continue
        if used + tokens > budget:
            break
        used += tokens
        covered.update(ids)
    return sum(1 for e in evidence if e in covered) / len(evidence) if evidence else 0.0


def _pools(memory: Memory, scope: Scope, query: str) -> dict[int, dict[_Key, Any]]:
    """The candidate pool at each of :data:`POOL_SIZES`: the values of the dense and lexical
    candidates together, by namespace and key, asked as recall asks (one request)."""
    store = memory.store
    if not isinstance(store, CandidateStore):
        raise ConfigurationError(
            f"the miss table asks the store for its candidate lists, and {type(store).__name__} has none; "
            "run it on the product row (Memory(), embedded Qdrant)"
        )
    config = memory.recall_config
    retrieval = config.retrieval or RetrievalConfig()
    searched: list[tuple[str, ...]] = []
    for compartment in config.compartments:
        try:
            searched.append(memory.layout.namespace(compartment, scope))
        except ScopeError:
            continue
    queries = [
        CandidateQuery(
            ns,
            query,
            max(size, config.candidates),
            None,
            retrieval.background_df,
            retrieval.background_min_docs,
        )
        for size in POOL_SIZES
        for ns in searched
    ]
    answers = iter(store.search_candidates(queries))
    pools: dict[int, dict[_Key, Any]] = {}
    for size in POOL_SIZES:
        pool: dict[_Key, Any] = {}
        for ns in searched:
            found = next(answers)
            for item in (*found.dense, *found.lexical):
                if tuple(item.namespace) == ns:
                    pool.setdefault((ns, item.key), item.value)
        pools[size] = pool
    return pools


def question_misses(
    memory: Memory,
    recall: Recall,
    question: Question,
    scope: Scope,
    found: set[str],
    seen: dict[Any, set[str]],
    *,
    token_model: str,
) -> QuestionMisses:
    """Where each of ``question``'s evidence turns went in ``recall`` (``found``: the turn ids it
    injected, as the product row counts them), and the oracle's share of them."""
    pools = _pools(memory, scope, recall.query)
    reached: dict[str, str] = {}
    for considered in recall.considered:
        namespace = memory.layout.namespace(Compartment(considered.compartment), scope)
        fate = _STAGE.get(considered.outcome, "ranked out")
        for turn in _turn_ids(memory, namespace, considered.id, None, seen):
            if fate != "injected" and _ORDER[fate] > _ORDER.get(reached.get(turn, ""), -1):
                reached[turn] = fate
    own = _pool_size((memory.recall_config.retrieval or RetrievalConfig()).candidates)
    carried: dict[int, set[str]] = {size: set() for size in POOL_SIZES}
    costs: list[tuple[int, set[str]]] = []  # the oracle's choice: the own pool's evidence items
    for size, pool in pools.items():
        for (ns, key), value in pool.items():
            turns = _turn_ids(memory, ns, key, value, seen)
            carried[size] |= turns
            if size == own and turns.intersection(question.evidence):
                costs.append((count_tokens(str(value.get("content", "")), model=token_model), turns))
    fates = []
    for turn in question.evidence:
        if turn in found:
            fates.append("injected")
        elif turn in reached:
            fates.append(reached[turn])
        elif turn in carried[own]:
            fates.append("ranked out")
        else:
            fates.append("not in pool")
    outside = tuple(sum(1 for e in question.evidence if e not in carried[size]) for size in POOL_SIZES)
    oracle = tuple(oracle_share(question.evidence, costs, budget) for budget in ORACLE_BUDGETS)
    return QuestionMisses(question.category, tuple(fates), outside, oracle)


def _pool_size(candidates: int) -> int:
    """The size of :data:`POOL_SIZES` that is the recall's own pool (``candidates`` per signal)."""
    if candidates not in POOL_SIZES:
        raise ConfigurationError(
            f"the miss table measures the default pool ({POOL_SIZES[0]} candidates per signal); this "
            f"recall asks for {candidates}. Fix: run it on the product row (the default RetrievalConfig)"
        )
    return candidates
