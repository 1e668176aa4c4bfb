"""How much a conversation turn tells: the LoCoMo recipe's prior for ranking remembered turns.

This is benchmark code: English word lists and weights fitted on one dataset
(LoCoMo conversations 0-4), used by ``langmem-plugin bench locomo`` through
:class:`~langmem_plugin.bench.locomo.lifts.SalienceLift`. It is not part of the
product's retrieval; copy it, or write your own :class:`~langmem_plugin.services.recall.retrieval.Lift`,
for data like it.

In a conversation most turns are not worth recalling on their own. "That's
awesome! What did you paint?" shares every word with the question "What did
Melanie paint?", and a retriever puts it first; the turn that answers ("I
painted a sunset by the lake last week") shares fewer. What sets the answer
apart is visible in the turn alone, without the query:

- it **tells** rather than **asks** (its last sentence is not a question);
- it is about the **speaker** ("I", "my", "we") rather than the **listener** ("you", "your");
- it is **longer**, and it is not a short **reaction** ("Wow, thanks!") or
  exclamation; a **greeting** opener ("Hey Dave! Guess what...") usually brings news.

:func:`turn_salience` scores those features with a linear model: the log-odds
of a turn being a question's evidence, fitted on conversations 0-4 of LoCoMo
(logistic regression over the top-50 candidates that the LoCoMo recipe without
salience returns for every question there; ``langmem-plugin bench locomo``
reports conversations 5-9 apart). Only differences between scores matter: the
model has no intercept. The recipe adds it, weighted, to each candidate's
fused score.

Text in square brackets (an attachment's description, ``[shares a photo of …]``)
and a leading speaker label (``"Caroline: "``) are not part of what is scored.

>>> turn_salience("I painted a sunset by the lake last week, it took me two days.") > turn_salience(
...     "Wow, that's so cool! What did you paint?"
... )
True
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["FEATURES", "SALIENCE_WEIGHTS", "memory_salience", "salience_features", "turn_salience"]

_SPEAKER = re.compile(r"^[^\n:]{1,40}:\s+")
_BRACKETS = re.compile(r"\[[^\]]*\]")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"[A-Za-z']+")
_SELF = frozenset(
    {"i", "i'm", "i've", "i'll", "i'd", "my", "me", "mine", "myself", "we", "we're", "we've", "our", "us"}
)
_LISTENER = frozenset({"you", "your", "you're", "you've", "you'll", "you'd", "yours", "yourself"})
_GREETING = re.compile(r"(hey|hi|hello|long time|good to see|good to hear)\b")
_REACTION = re.compile(
    r"(wow|thanks|thank you|that's|aw|haha|omg|congrats|sounds|great|cool|yeah|totally|i agree)\b"
)

#: The features :func:`salience_features` returns, in order.
FEATURES: tuple[str, ...] = (
    "asks_last",  # the last sentence is a question
    "asks_share",  # the share of sentences that are questions
    "self_words",  # log(1 + first-person words)
    "listener_words",  # log(1 + second-person words)
    "more_self",  # more first-person than second-person words
    "more_listener",  # more second-person than first-person words
    "length",  # log(1 + words)
    "greeting",  # opens with a greeting
    "reaction",  # opens with a reaction ("wow", "thanks", "that's ...")
    "exclamation",  # a short exclamation (fewer than 12 words, with "!")
)

#: The model's weights, one per feature of :data:`FEATURES` (fitted as the module docs say).
SALIENCE_WEIGHTS: tuple[float, ...] = (
    -0.281,
    -0.906,
    0.100,
    -0.268,
    0.232,
    -0.549,
    0.471,
    0.360,
    -0.221,
    -0.309,
)


def salience_features(text: str) -> tuple[float, ...]:
    """The features of :data:`FEATURES` for one turn's text."""
    text = _BRACKETS.sub(" ", _SPEAKER.sub("", text.strip(), count=1)).strip()
    sentences = [s for s in _SENTENCE_END.split(text) if s] or [""]
    asks = [s.rstrip().endswith("?") for s in sentences]
    words = [w.lower() for w in _WORD.findall(text)]
    own = sum(w in _SELF for w in words)
    other = sum(w in _LISTENER for w in words)
    low = text.lower()
    return (
        float(asks[-1]),
        sum(asks) / len(asks),
        math.log1p(own),
        math.log1p(other),
        float(own > other),
        float(other > own),
        math.log1p(len(words)),
        float(_GREETING.match(low) is not None),
        float(_REACTION.match(low) is not None),
        float("!" in text and len(words) < 12),
    )


def turn_salience(text: str) -> float:
    """How much ``text`` (one conversation turn) tells, in log-odds units; higher tells more."""
    return sum(w * x for w, x in zip(SALIENCE_WEIGHTS, salience_features(text), strict=True))


def memory_salience(value: Mapping[str, Any]) -> float:
    """:func:`turn_salience` of a stored memory's ``content`` (0 when it has none)."""
    content = value.get("content")
    return turn_salience(content) if isinstance(content, str) else 0.0
