"""Layer 1: what everything else stands on — the memory record, scope, tokens, embeddings, BM25, the fence, steps.

Nothing here knows of stores, graphs or prompts beyond quoting text for one (:mod:`.fence`).
"""
