"""Benchmarks: scripts that measure langmem_plugin and its peers side by side and print ratios.

Run them as ``langmem-plugin bench NAME``; they are not tests.
"""
