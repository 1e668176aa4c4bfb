"""The demo's script: what the user says in each thread, and the offline models that play it.

``langmem-plugin demo`` (:func:`langmem_plugin.demo.run_demo`) runs :data:`SCENARIO` through a
real memory agent. Without ``OPENAI_API_KEY`` the agent's model is :func:`offline_model`, a
:class:`~langmem_plugin.testing.ScriptedChatModel` that emits real tool calls from a fixed script
and answers from what recall put in its prompt, and background extraction uses
:func:`offline_extractor`, which reads the real extraction and consolidation prompts.
"""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage

from langmem_plugin.testing import ScriptedChatModel, tool_call

__all__ = [
    "EXTRACTED",
    "PLAN_STEPS",
    "SCENARIO",
    "offline_extractor",
    "offline_model",
    "plan_section",
    "system_text",
]

#: (thread, what the user says), in order.
SCENARIO: tuple[tuple[str, str], ...] = (
    ("thread-1", "Hi! I'm Sam. I'm vegetarian, and please give me quantities in metric units."),
    ("thread-1", "I also love spicy food, and I'm training for a half marathon in May."),
    ("thread-2", "Can you suggest a dinner for tonight?"),
    ("thread-2", "Actually, I started eating fish again last month."),
    ("thread-2", "Also, forget the half marathon: I dropped it."),
    ("thread-3", "What do you remember about me?"),
    ("thread-4", "Help me host a dinner for six on Saturday: menu, shopping, cooking."),
    ("thread-4", "The menu is settled: the chickpea curry, with grilled sardines as a starter."),
    ("thread-5", "By the way, I've gone fully vegetarian again: no more fish for me."),
)

#: What the scripted extractor finds in thread 5 (the agent itself calls no tool there).
EXTRACTED = "Sam is vegetarian again: no fish, no meat"
PLAN_STEPS = ("Plan the menu", "Shop for the ingredients", "Cook and serve")


def system_text(messages: list[BaseMessage]) -> str:
    """The text of the system message ``messages`` start with ('' without one)."""
    return str(messages[0].content) if messages and isinstance(messages[0], SystemMessage) else ""


def _last_result(messages: list[BaseMessage]) -> list[dict[str, Any]]:
    for message in reversed(messages):
        if isinstance(message, ToolMessage):
            try:
                found = json.loads(str(message.content))
            except json.JSONDecodeError:
                return []
            return found if isinstance(found, list) else []
    return []


def _first_id(messages: list[BaseMessage]) -> str:
    found = _last_result(messages)
    return str(found[0]["id"]) if found else "unknown"


def _dinner(messages: list[BaseMessage]) -> str:
    context = system_text(messages).lower()
    dish = "a spicy chickpea and spinach curry" if "vegetarian" in context else "a dish of your choice"
    units = " (400 g chickpeas, 200 g spinach, 250 ml coconut milk)" if "metric" in context else ""
    return f"How about {dish}{units}? It fits what you told me."


def _profile(messages: list[BaseMessage]) -> str:
    """The memories recalled, not the past exchanges (episodes) recalled beside them."""
    context = system_text(messages)
    facts = [
        line.split(") ", 1)[1]
        for line in context.splitlines()
        if line.startswith("- (id ")  # a past exchange is shown without an id
    ]
    return "Here is what I remember: " + "; ".join(json.loads(f) for f in facts) if facts else "Nothing yet."


def _calls(*saves: tuple[str, str, int | None]) -> AIMessage:
    """One AI message with several save_memory calls."""
    calls = []
    for content, category, priority in saves:
        args: dict[str, Any] = {"content": content, "category": category}
        if priority is not None:
            args["priority"] = priority
        calls.extend(tool_call("save_memory", **args).tool_calls)
    return AIMessage("", tool_calls=calls)


def offline_model() -> ScriptedChatModel:
    """The offline scripted model: real tool calls from a fixed script, answers from the prompt."""
    return ScriptedChatModel(
        [
            # thread 1, turn 1
            _calls(
                ("Sam is vegetarian", "preferences/food", None),
                ("Sam wants quantities in metric units", "preferences/units", None),
            ),
            "Nice to meet you, Sam! I'll remember that you're vegetarian and prefer metric units.",
            # thread 1, turn 2
            _calls(
                ("Sam loves spicy food", "preferences/food", None),
                ("Sam is training for a half marathon in May", "goals/running", 7),
            ),
            "Great — spicy food and a half marathon in May, noted. Good luck with the training!",
            # thread 2, turn 1: answers from recalled memory, no tool call
            _dinner,
            # thread 2, turn 2: find the diet memory, update it
            tool_call("search_memory", query="vegetarian diet", category="preferences/food"),
            lambda messages: tool_call(
                "update_memory", id=_first_id(messages), content="Sam is pescatarian: eats fish, no meat"
            ),
            "Got it — I've updated your diet: pescatarian (fish, no meat).",
            # thread 2, turn 3: find the marathon memory, delete it
            tool_call("search_memory", query="half marathon", category="goals"),
            lambda messages: tool_call("delete_memory", id=_first_id(messages)),
            "Done — I've forgotten the half marathon.",
            # thread 3
            _profile,
            # thread 4, turn 1: a multi-step task gets a plan
            tool_call("create_plan", goal="Host a dinner for six on Saturday", steps=list(PLAN_STEPS)),
            _plan_answer,
            # thread 4, turn 2: one step done, the next one started (two calls in one step)
            AIMessage(
                "",
                tool_calls=[
                    *tool_call(
                        "update_plan_step", step_id="s1", status="completed", notes="curry, sardines starter"
                    ).tool_calls,
                    *tool_call("update_plan_step", step_id="s2", status="in_progress").tool_calls,
                ],
            ),
            _plan_answer,
            # thread 5: no tool call; extraction picks the change up after the turn
            "Thanks for telling me!",
        ]
    )


def plan_section(system: str) -> list[str]:
    """The ``[plan]`` section of a system prompt, line by line (empty when there is none)."""
    lines = system.splitlines()
    if "[plan]" not in lines:
        return []
    section = []
    for line in lines[lines.index("[plan]") + 1 :]:
        if line.startswith(("[", "</memory_context>")):
            break
        section.append(line)
    return section


def _plan_answer(messages: list[BaseMessage]) -> str:
    """An answer from the plan the model sees in its prompt (its goal line and its steps)."""
    section = plan_section(system_text(messages))
    steps = [line for line in section if line.startswith("- ")]
    current = next((line for line in steps if "[in_progress]" in line or "[pending]" in line), None)
    if not section or current is None:
        return "The plan is done."
    done = section[0].rsplit("(", 1)[-1].rstrip(")")
    description = current.split("] ", 1)[1].split(" notes:", 1)[0]
    return f"On it: {done}. Next up: {json.loads(description)}."


def _extract(messages: list[BaseMessage]) -> AIMessage:
    """The scripted extractor: plays extraction and the consolidation decision, from the prompt."""
    prompt = "\n".join(str(m.content) for m in messages)
    if "NEW 1:" in prompt:  # the consolidation call: the new diet supersedes the old one
        old = next(
            (
                line.split("id=", 1)[1].split(":", 1)[0]
                for line in prompt.splitlines()
                if "EXISTING id=" in line and "pescatarian" in line
            ),
            None,
        )
        if old is None:
            decision = {"candidate": 1, "action": "ADD", "reason": "a new fact"}
        else:
            decision = {
                "candidate": 1,
                "action": "INVALIDATE",
                "target_id": old,
                "reason": "Sam stopped eating fish",
            }
        return tool_call("ConsolidationDecisions", decisions=[decision])
    if "fully vegetarian again" in prompt:
        memory = {"content": EXTRACTED, "kind": "preference", "category": "preferences/food", "priority": 8}
        return tool_call("ExtractedMemories", memories=[memory])
    return tool_call("ExtractedMemories", memories=[])


def offline_extractor() -> ScriptedChatModel:
    """The offline extractor: a scripted model that finds the diet change of thread 5 and decides
    how it consolidates (it reads the real prompts: the conversation, then the near matches)."""
    return ScriptedChatModel([_extract] * 50, model_name="scripted-extractor")
