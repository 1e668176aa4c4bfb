"""Benchmarks: scripts that measure langmem_plugin and its peers side by side and print ratios.

Run them as ``langmem-plugin bench NAME``; they are not tests. They use the package's public
modules only, as a user benchmarking their own setup would. What is fitted to one dataset lives
here, not in the product: the LoCoMo recipe's lifts (:mod:`.locomo_lifts`, over
``RetrievalConfig(lifts=...)``) and its salience model (:mod:`.locomo_salience`).
"""
