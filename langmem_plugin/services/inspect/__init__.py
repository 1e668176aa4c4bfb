"""Inspection: what a store remembers, and why recall shows what it shows.

- :mod:`.catalog`: the users, threads and agents a store holds (:class:`Catalog`).
- :mod:`.rows`: a stored memory as a row (:class:`MemoryRow`), any stored item as JSON (:func:`raw_item`).
- :mod:`.selection`: which memories a view holds: a compartment, or everything of a thread
  (:data:`THREAD`), filtered and sorted (:data:`SORTS`) over a bounded read.
- :mod:`.listing`: a view's memories as rows, paged (:class:`MemoryPage`), or exported whole.
- :mod:`.detail`: one memory with its history, the exchanges it came from, the item as stored and
  the memories it replaced (:class:`MemoryDetail`).
- :mod:`.browse`: the store as namespaces, raw (:class:`NamespacePage`).
- :mod:`.changes`: a recall explained (every candidate's signals and outcome, nothing written),
  and edits and forgetting through the memory tools' own steps, recorded as the inspector's.
  Pages and details render as HTML tables in a notebook (``_repr_html_``).

The terminal (``langmem-plugin memories``), the web page (``langmem-plugin inspect``) and the
notebook all read through here (:class:`langmem_plugin.surfaces.inspector.Inspector`).
"""

from __future__ import annotations

from langmem_plugin.services.inspect.browse import (
    MAX_CHILDREN,
    NamespacePage,
    namespace_export_steps,
    namespace_steps,
)
from langmem_plugin.services.inspect.catalog import Catalog, catalog_steps
from langmem_plugin.services.inspect.changes import (
    EDITABLE,
    RECORDED_BY,
    edit_steps,
    explain_steps,
    remove_steps,
)
from langmem_plugin.services.inspect.detail import Exchange, MemoryDetail, detail_steps
from langmem_plugin.services.inspect.listing import MAX_PAGE, MemoryPage, export_steps, page_steps
from langmem_plugin.services.inspect.rows import MemoryRow, raw_item, row_of
from langmem_plugin.services.inspect.selection import SCAN, SORTS, THREAD, parse_sort

__all__ = [
    "EDITABLE",
    "MAX_CHILDREN",
    "MAX_PAGE",
    "RECORDED_BY",
    "SCAN",
    "SORTS",
    "THREAD",
    "Catalog",
    "Exchange",
    "MemoryDetail",
    "MemoryPage",
    "MemoryRow",
    "NamespacePage",
    "catalog_steps",
    "detail_steps",
    "edit_steps",
    "explain_steps",
    "export_steps",
    "namespace_export_steps",
    "namespace_steps",
    "page_steps",
    "parse_sort",
    "raw_item",
    "remove_steps",
    "row_of",
]
