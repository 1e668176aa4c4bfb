"""The offline core in one page: tokens, embeddings, BM25, scope and the memory record.

Run: python examples/offline_core.py
"""

from __future__ import annotations

import numpy as np
from langchain_core.messages import HumanMessage, SystemMessage

from langmem_plugin import MemoryRecord, MiniLMEmbeddings, Scope, count_tokens
from langmem_plugin.core.lexical import BM25Index
from langmem_plugin.core.tokens import count_message_tokens


def main() -> None:
    memories = [
        MemoryRecord(content="Prefers green tea over coffee", category="preferences/drinks", priority=7),
        MemoryRecord(content="Is training for the Boston marathon in April", category="goals/sport"),
        MemoryRecord(content="Works on the rockbot project with Ana", category="project/rockbot"),
    ]
    query = "What should I offer them to drink?"

    embeddings = MiniLMEmbeddings()
    vectors = np.array(embeddings.embed_documents([m.content for m in memories]))
    dense = vectors @ np.array(embeddings.embed_query(query))

    lexical = BM25Index()
    for i, memory in enumerate(memories):
        lexical.add(i, memory.content)
    bm25 = lexical.scores(query)

    print(f"query: {query!r}")
    for i in np.argsort(-dense):
        memory = memories[i]
        print(
            f"  dense {dense[i]:.2f}  bm25 {bm25.get(int(i), 0.0):.2f}  [{memory.category}] {memory.content}"
        )

    scope = Scope.from_config({"configurable": {"user_id": "u1", "thread_id": "t1"}})
    print("user namespace:", scope.namespace(("memories", "{user_id}")))
    prompt = [SystemMessage("Memories:\n" + "\n".join(m.content for m in memories)), HumanMessage(query)]
    print(
        "tokens (gpt-4o):",
        count_message_tokens(prompt, model="gpt-4o"),
        "| query alone:",
        count_tokens(query),
    )
    print("stored value:", memories[0].to_value())


if __name__ == "__main__":
    main()
