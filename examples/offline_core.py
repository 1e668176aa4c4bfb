"""The offline core in one page: tokens, embeddings, BM25, scope, the memory record — and the
scores recall shows, each explained where it is printed.

Run: python examples/offline_core.py
"""

from __future__ import annotations

import numpy as np
from langchain_core.messages import HumanMessage, SystemMessage

from langmem_plugin import Memory, MemoryRecord, MiniLMEmbeddings, Scope, count_tokens
from langmem_plugin.core.lexical import BM25Index
from langmem_plugin.core.tokens import count_message_tokens

MEMORIES = [
    MemoryRecord(content="Prefers green tea over coffee", category="preferences/drinks", priority=7),
    MemoryRecord(content="Is training for the Boston marathon in April", category="goals/sport"),
    MemoryRecord(content="Works on the rockbot project with Ana", category="project/rockbot"),
]
QUERY = "Which tea should I offer them to drink?"


def raw_scores(embeddings: MiniLMEmbeddings) -> list[tuple[float, float]]:
    """The two signals of hybrid search, each on its own scale."""
    vectors = np.array(embeddings.embed_documents([m.content for m in MEMORIES]))
    dense = vectors @ np.array(embeddings.embed_query(QUERY))
    index = BM25Index()
    for i, memory in enumerate(MEMORIES):
        index.add(i, memory.content)
    bm25 = index.scores(QUERY)
    print(f"query: {QUERY!r}")
    print(
        "  cosine = similarity of meaning, -1 to 1 (MiniLM: unrelated text is near 0; recall wants 0.2 "
        "from a memory that shares no word with the query)"
    )
    print("  bm25   = shared words, weighted by how rare they are (0.00: no word in common)")
    for i in np.argsort(-dense):
        memory, lexical_score = MEMORIES[i], bm25.get(int(i), 0.0)
        print(f"  cosine {dense[i]:+.2f}  bm25 {lexical_score:.2f}  [{memory.category}] {memory.content}")
    return [(float(dense[i]), bm25.get(i, 0.0)) for i in range(len(MEMORIES))]


def recalled(embeddings: MiniLMEmbeddings, raw: list[tuple[float, float]]) -> None:
    """What recall makes of them: a match relative to the other candidates, and a rank."""
    config = {"configurable": {"user_id": "u1", "thread_id": "t1"}}
    with Memory(embeddings=embeddings) as memory:
        save = {tool.name: tool for tool in memory.tools}["save_memory"]
        for record in MEMORIES:
            args = {"content": record.content, "category": record.category, "priority": record.priority}
            save.invoke(args, config)
        found = memory.recall(QUERY, config)  # a str is one user message, as for a chat model
    print(f"recall for {found.query!r}:")
    print(
        "  match = dense and BM25 fused, in standard deviations from the average candidate of this "
        "search (+1.00: one above average; below 0: worse than average)"
    )
    print(
        "  rank  = recall's order, 0 to 1: 0.75 x match scaled to the best (below average counts 0) "
        "+ 0.15 x priority + 0.10 x recency"
    )
    for item in found.items:
        print(f"  match {item.relevance or 0.0:+.2f}  rank {item.score:.3f}  {item.content}")
    shown = {item.content for item in found.items}
    for record, (cosine, bm25) in zip(MEMORIES, raw, strict=True):
        if record.content not in shown:
            why = "no shared word and cosine under 0.2" if bm25 == 0 and cosine < 0.2 else "over budget"
            print(f"  not recalled ({why}, cosine {cosine:+.2f})  {record.content}")


def main() -> None:
    embeddings = MiniLMEmbeddings()
    recalled(embeddings, raw_scores(embeddings))

    scope = Scope.from_config({"configurable": {"user_id": "u1", "thread_id": "t1"}})
    print("user namespace:", scope.namespace(("memories", "{user_id}")))
    prompt = [SystemMessage("Memories:\n" + "\n".join(m.content for m in MEMORIES)), HumanMessage(QUERY)]
    print(
        "tokens (gpt-4o):",
        count_message_tokens(prompt, model="gpt-4o"),
        "| query alone:",
        count_tokens(QUERY),
    )
    print("stored value:", MEMORIES[0].to_value())


if __name__ == "__main__":
    main()
