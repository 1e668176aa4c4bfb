"""Layer 1: what everything else stands on.

The memory record, scope, tokens, embeddings, BM25, the prompt fence and the steps
pattern. Nothing here knows of stores, graphs or prompts beyond quoting text for one
(:mod:`.fence`).
"""
