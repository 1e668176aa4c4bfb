"""The memory inspector's places outside the notebook, over
:class:`langmem_plugin.surfaces.inspector.Inspector`:

- :mod:`.web`: the web page of ``langmem-plugin inspect STORE`` (Starlette, Jinja2 templates in
  ``templates/``, uvicorn; the ``inspect`` extra): the catalog, a compartment's or a thread's
  memories (sorted, exported as JSON), a search as recall sees it, a memory's history and the item
  as stored, the store by namespace, and edits and forgetting when started with
  ``--allow-writes``; :mod:`.views` writes its values (escaped, short times, safe JSON) and
  :mod:`.guard` its headers; :mod:`.requests` reads what a request says.
- the terminal's tables (``langmem-plugin memories``) and the opening of a store by its path or URL.

Nothing is imported here: the web page's dependencies load only when :mod:`.web` is imported.
"""
