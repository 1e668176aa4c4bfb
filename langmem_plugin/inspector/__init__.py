"""The memory inspector's places outside the notebook, over
:class:`langmem_plugin.surfaces.inspector.Inspector`:

- :mod:`.web`: the web page of ``langmem-plugin inspect STORE`` (Starlette, Jinja2 templates in
  ``templates/``, uvicorn; the ``inspect`` extra): the catalog, a compartment's memories, a search
  as recall sees it, a memory's history, and edits and forgetting when started with
  ``--allow-writes``.
- the terminal's tables (``langmem-plugin memories``) and the opening of a store by its path or URL.

Nothing is imported here: the web page's dependencies load only when :mod:`.web` is imported.
"""
