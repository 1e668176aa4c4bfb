"""How a document becomes chunks: any LangChain ``TextSplitter``, counting tokens with our tokenizer.

``add_documents(..., splitter=...)`` takes any splitter of ``langchain-text-splitters`` (or your own
subclass of ``TextSplitter``). Without one, :func:`default_splitter` gives the one measured best
for recall (``langmem-plugin bench knowledge``, see docs/benchmarks.md): chunks of at most
``chunk_tokens`` tokens of the configured model's tokenizer.

The default, :func:`section_splitter`, is LangChain's ``RecursiveCharacterTextSplitter`` with
Markdown's separators (headings, code fences, rules, paragraphs, lines) and then sentences, lengths
in tokens, no overlap: a heading starts a chunk and stays with the text under it when both fit.
It replaced this package's own paragraph packer, which showed less of the evidence LoCoMo's
questions need (``python -m langmem_plugin.bench.knowledge``; docs/knowledge.md has the table).

>>> section_splitter(8).split_text("# Title\\n\\nFirst paragraph.\\n\\n# Next\\n\\nSecond paragraph.")
['# Title\\n\\nFirst paragraph.', '# Next\\n\\nSecond paragraph.']
"""

from __future__ import annotations

import functools

from langchain_text_splitters import Language, RecursiveCharacterTextSplitter, TextSplitter

from langmem_plugin.core.tokens import count_tokens
from langmem_plugin.errors import ConfigurationError

__all__ = ["DEFAULT_CHUNK_TOKENS", "MIN_CHUNK_TOKENS", "default_splitter", "section_splitter"]

MIN_CHUNK_TOKENS = 8
#: At most this many tokens per chunk by default: about what the offline embedder reads whole
#: (MiniLM embeds 256 word pieces; a 300-token chunk lost its tail from the vector), and the size
#: that showed the most evidence on both LoCoMo and REALTALK (docs/knowledge.md).
DEFAULT_CHUNK_TOKENS = 200


def _check(max_tokens: int) -> None:
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < MIN_CHUNK_TOKENS:
        raise ConfigurationError(
            f"chunk_tokens must be an int of at least {MIN_CHUNK_TOKENS}, got {max_tokens!r}. "
            f"Fix: pass chunk_tokens={DEFAULT_CHUNK_TOKENS} (the default) or another size."
        )


def section_splitter(
    max_tokens: int = DEFAULT_CHUNK_TOKENS, model: str | None = None
) -> RecursiveCharacterTextSplitter:
    """LangChain's recursive splitter on Markdown structure, then sentences; lengths in ``model``'s tokens."""
    _check(max_tokens)
    separators = [
        *RecursiveCharacterTextSplitter.get_separators_for_language(Language.MARKDOWN)[:-2],
        r"(?<=[.!?])\s+",
        " ",
        "",
    ]
    return RecursiveCharacterTextSplitter(
        separators=separators,
        is_separator_regex=True,
        chunk_size=max_tokens,
        chunk_overlap=0,
        length_function=functools.partial(count_tokens, model=model),
    )


def default_splitter(max_tokens: int = DEFAULT_CHUNK_TOKENS, model: str | None = None) -> TextSplitter:
    """The splitter ``add_documents`` uses when it is given none: :func:`section_splitter`."""
    return section_splitter(max_tokens, model)
