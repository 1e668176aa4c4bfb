"""Benchmarks: scripts that measure langmem_plugin and its peers side by side and print ratios.

Run them as ``langmem-plugin bench NAME``; they are not tests. They use the package's public
modules only, as a user benchmarking their own setup would. One room per benchmark: a module
when it fits in one, a package when it has several parts (its ``__init__`` describes what it
measures and re-exports what the command uses; a ``run`` module runs it):

- :mod:`.locomo` (``bench locomo``): evidence recall on LoCoMo; its data, its rows (the recipe and
  its ablations), the ``product`` rows, the result tables, and what is fitted to that one dataset:
  the recipe's lifts (:mod:`.locomo.lifts`, over ``RetrievalConfig(lifts=...)``) and its salience
  model (:mod:`.locomo.salience`);
- :mod:`.stores` (``bench stores``): QdrantStore beside its peers; the data, the peers, the
  engine's ceiling, the table;
- :mod:`.checkpointer`, :mod:`.memory`, :mod:`.context`, :mod:`.plan`, :mod:`.inspect`,
  :mod:`.forgetting`, :mod:`.startup`, :mod:`.realtalk`, :mod:`.scale` (``bench checkpointer``,
  ``memory``, ``context``, ``plan``, ``inspect``, ``forgetting``, ``startup``, ``realtalk``,
  ``scale``), and
  :mod:`.knowledge`, :mod:`.postgres`, :mod:`.extraction`, :mod:`.import_history` (run with
  ``python -m``): one module each.

The shared room, used by every benchmark, stays at this level: :mod:`.report` (timers,
percentiles, ratios, the table format) and :mod:`.core` (``bench core``, the offline core, whose
:func:`~.core.sample_sentences` the other benchmarks draw their texts from).
"""
