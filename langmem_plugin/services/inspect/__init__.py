"""Inspection: what a store remembers, and why recall shows what it shows.

- :mod:`.catalog`: the users, threads and agents a store holds (:class:`Catalog`).
- :mod:`.listing`: a compartment's memories as rows, paged and filtered (:class:`MemoryPage`),
  and one memory with its history and the exchanges it came from (:class:`MemoryDetail`).
- :mod:`.changes`: a recall explained (every candidate's signals and outcome, nothing written),
  and edits and forgetting through the memory tools' own steps, recorded as the inspector's.
  Pages and details render as HTML tables in a notebook (``_repr_html_``).

The terminal (``langmem-plugin memories``), the web page (``langmem-plugin inspect``) and the
notebook all read through here (:class:`langmem_plugin.surfaces.inspector.Inspector`).
"""

from __future__ import annotations

from langmem_plugin.services.inspect.catalog import Catalog, catalog_steps
from langmem_plugin.services.inspect.changes import (
    EDITABLE,
    RECORDED_BY,
    edit_steps,
    explain_steps,
    remove_steps,
)
from langmem_plugin.services.inspect.listing import (
    MAX_PAGE,
    Exchange,
    MemoryDetail,
    MemoryPage,
    MemoryRow,
    detail_steps,
    page_steps,
    row_of,
)

__all__ = [
    "EDITABLE",
    "MAX_PAGE",
    "RECORDED_BY",
    "Catalog",
    "Exchange",
    "MemoryDetail",
    "MemoryPage",
    "MemoryRow",
    "catalog_steps",
    "detail_steps",
    "edit_steps",
    "explain_steps",
    "page_steps",
    "remove_steps",
    "row_of",
]
