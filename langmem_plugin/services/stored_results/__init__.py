"""Stored tool results: whose a stored result is, how it is cut down, and how the model reads it,
every read bounded whatever the result or the model sends.

- :mod:`.result_store`: a result's owner (its user and exact thread), its namespace, and what of it
  a store can take (cleaned, sized);
- :mod:`.result_reads`: the reads the model can make of a stored result (``retrieve_result``,
  ``query_results``): a page, a JSON path, matching lines;
- :mod:`.compactors`: how a result is cut down to what fits (text, JSON, tables, extractive
  summary);
- :mod:`.patterns` (RE2, linear time) and :mod:`.json_text` (depth-bounded JSON, no recursion):
  what keeps every read bounded.

The tool-results feature itself (when a result is stored, shown whole or cited, and its
:class:`~langmem_plugin.services.context.results.ResultsConfig`) is the context room's; it uses
this room through this door (``tests/test_package.py`` pins it).
"""

from __future__ import annotations

from langmem_plugin.services.stored_results.compactors import Compactor, compact, head_tokens
from langmem_plugin.services.stored_results.patterns import without_surrogates
from langmem_plugin.services.stored_results.result_reads import (
    StoredResult,
    Transform,
    get_result_steps,
    list_results_steps,
    transform_result,
)
from langmem_plugin.services.stored_results.result_store import (
    PendingResult,
    is_owned,
    results_namespace,
    store_results_steps,
)

__all__ = [
    "Compactor",
    "PendingResult",
    "StoredResult",
    "Transform",
    "compact",
    "get_result_steps",
    "head_tokens",
    "is_owned",
    "list_results_steps",
    "results_namespace",
    "store_results_steps",
    "transform_result",
    "without_surrogates",
]
