"""Hypothesis strategies of chat histories for ``tests/test_hostile_api.py``: valid ones of every
shape ``Memory.import_history`` reads, and ones with a single bad part anywhere (recursive junk,
malformed messages, tool calls, sessions, dates), each with the place its error must name.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date, datetime
from typing import Any

from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)

from langmem_plugin.services.remember.history_import import parse_time

# --------------------------------------------------------------------------- valid parts

text = st.text(max_size=30)
names = st.text(
    alphabet=st.characters(exclude_categories=("Cc", "Cs"), exclude_characters="\u2028\u2029"),
    min_size=1,
    max_size=12,
).filter(lambda s: bool(s.strip()))
ids = st.text(alphabet="abcXYZ019:-_", min_size=1, max_size=8)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3)
    ),
    max_leaves=6,
)
one_call = st.fixed_dictionaries(
    {"name": names, "args": st.dictionaries(st.text(max_size=4), json_values, max_size=3), "id": ids},
    optional={"type": st.just("tool_call")},
)
valid_calls = st.lists(one_call, max_size=2)
some_calls = st.lists(one_call, min_size=1, max_size=2)  # (not .filter(bool): hypothesis trips on it)
blocks = st.lists(
    st.one_of(st.builds(lambda t: {"type": "text", "text": t}, text), text), min_size=1, max_size=2
)
SPEAKERS_RESERVED = {"user", "human", "assistant", "ai", "tool", "system", "developer"}
speakers = names.filter(lambda s: s.lower() not in SPEAKERS_RESERVED)


def _with(base: st.SearchStrategy[dict[str, Any]], **optional: st.SearchStrategy[Any]) -> Any:
    return st.tuples(base, st.fixed_dictionaries({}, optional=optional)).map(lambda p: {**p[0], **p[1]})


def valid_messages(per: str) -> st.SearchStrategy[Any]:
    """Messages of every accepted shape (speaker names as roles only with per='message')."""
    extras = {"id": ids | st.none(), "name": names | st.none(), "timestamp": text}
    shapes = [
        _with(
            st.fixed_dictionaries(
                {"role": st.sampled_from(["user", "human", "User"]), "content": text | blocks}
            ),
            **extras,
        ),
        _with(
            st.fixed_dictionaries(
                {"role": st.sampled_from(["assistant", "ai"]), "content": text, "tool_calls": valid_calls}
            ),
            **extras,
        ),
        st.builds(
            lambda calls: {"role": "assistant", "content": None, "tool_calls": calls},
            some_calls,
        ),
        _with(st.fixed_dictionaries({"role": st.just("tool"), "content": text}), tool_call_id=ids),
        st.fixed_dictionaries({"role": st.sampled_from(["system", "developer"]), "content": text}),
        st.fixed_dictionaries({"type": st.sampled_from(["human", "ai"]), "content": text}),
        st.tuples(st.sampled_from(["user", "assistant", "system"]), text),
        text.map(HumanMessage),
        st.builds(lambda t, c: AIMessage(t, tool_calls=c), text, valid_calls),
        st.builds(lambda t, i: ToolMessage(t, tool_call_id=i), text, ids),
        text.map(SystemMessage),
    ]
    if per == "message":
        shapes.append(st.fixed_dictionaries({"role": speakers, "content": text}))
    return st.one_of(shapes)


valid_dates = st.one_of(
    st.none(),
    st.just(""),
    st.datetimes(min_value=datetime(1990, 1, 1), max_value=datetime(2100, 1, 1)),
    st.dates(min_value=date(1990, 1, 1), max_value=date(2100, 1, 1)),
    st.dates(min_value=date(1990, 1, 1), max_value=date(2100, 1, 1)).map(lambda d: d.isoformat()),
    st.sampled_from(["1:56 pm on 8 May, 2023", "8 May 2023", "2024-03-01T09:00:00", "2023-05-08 13:56:00"]),
)


def valid_sessions(per: str) -> st.SearchStrategy[dict[str, Any]]:
    return _with(
        st.fixed_dictionaries({"messages": st.lists(valid_messages(per), max_size=4)}),
        date=valid_dates,
        id=names,
    )


# --------------------------------------------------------------------------- bad parts


class Unprintable:
    """A value whose repr raises: the error about it must still be raised, and typed."""

    def __repr__(self) -> str:
        raise RuntimeError("no repr")


scalars = st.one_of(
    st.integers(),
    st.floats(allow_nan=True),
    st.booleans(),
    st.binary(max_size=4),
    st.builds(object),
    st.builds(Unprintable),
    st.complex_numbers(max_magnitude=3),
)
# Nested junk (recursive): lists and dicts whose leaves are never text.
junk = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, min_size=1, max_size=3)
        | st.dictionaries(st.text(max_size=3), children, min_size=1, max_size=2)
    ),
    max_leaves=5,
)
not_lists = st.one_of(
    scalars, st.none(), st.text(max_size=5), st.dictionaries(st.text(max_size=3), junk, max_size=2)
)
# Content that is neither text nor a list of blocks (str or dict): a list here holds no block at all.
bad_contents = st.one_of(
    scalars,
    st.dictionaries(st.text(max_size=3), junk, max_size=2),
    st.lists(st.one_of(scalars, st.lists(junk, min_size=1, max_size=2)), min_size=1, max_size=3),
)
bad_names = st.one_of(
    junk,
    st.just(""),
    st.text(alphabet=" \t\u3000", min_size=1, max_size=3),  # blank
    st.builds(
        lambda a, c, b: a + c + b,
        names,
        st.sampled_from(["\n", "\r", "\x00", "\x1b", "\u2028", "\ud800"]),
        names,
    ),
    st.integers(201, 400).map(lambda n: "x" * n),
)
bad_ids = st.one_of(junk, st.just(""), st.sampled_from(["a b", "x\n", "tab\there", "\ud800"]))


def _call(**change: Any) -> dict[str, Any]:
    call: dict[str, Any] = {"name": "lookup", "args": {"q": "x"}, "id": "c1"}
    for key, value in change.items():
        if value is _DROP:
            del call[key]
        else:
            call[key] = value
    return call


_DROP = object()


def bad_calls(*, none_id_is_bad: bool) -> st.SearchStrategy[Any]:
    """One malformed tool call (an AIMessage's own may have ``"id": None``: LangChain allows it)."""
    bad_call_ids = st.one_of(junk, st.none()) if none_id_is_bad else junk
    return st.one_of(
        junk.filter(lambda v: not isinstance(v, dict)),
        st.text(max_size=4),
        st.sampled_from(["name", "args", "id"]).map(lambda k: _call(**{k: _DROP})),
        st.builds(
            lambda k: _call(**{k: 1}),
            st.text(max_size=6).filter(lambda k: k not in {"name", "args", "id", "type"}),
        ),
        st.one_of(
            junk.filter(lambda v: not isinstance(v, dict)), st.text(max_size=4), st.lists(st.integers())
        ).map(lambda a: _call(args=a)),
        st.just(_call(args={1: "x"})),
        bad_call_ids.map(lambda i: _call(id=i)),
        bad_names.map(lambda n: _call(name=n)),
        st.text(max_size=6).filter(lambda t: t != "tool_call").map(lambda t: _call(type=t)),
        st.just(
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ),  # OpenAI's form
    )


def bad_tool_calls(*, none_id_is_bad: bool = True) -> st.SearchStrategy[Any]:
    """A ``tool_calls`` value that is not a list, or a list with one malformed call among valid ones."""
    return st.one_of(
        st.one_of(scalars, st.text(max_size=4), st.dictionaries(st.text(max_size=3), junk, max_size=2)),
        st.tuples(valid_calls, bad_calls(none_id_is_bad=none_id_is_bad), st.integers(0, 2)).map(
            lambda p: [*p[0][: p[2]], p[1], *p[0][p[2] :]]
        ),
    )


bad_messages = st.one_of(
    junk,
    st.none(),
    st.text(max_size=6),
    st.lists(st.fixed_dictionaries({"role": st.just("user"), "content": text}), min_size=1, max_size=2),
    st.tuples(),
    st.tuples(st.just("user")),
    st.tuples(st.just("user"), text, text),
    st.tuples(bad_names, text),
    st.tuples(st.just("user"), bad_contents),
    st.fixed_dictionaries({"content": text}),  # no role
    st.fixed_dictionaries({"role": bad_names, "content": text}),
    st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "tool"])}),  # no content
    st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "tool"]), "content": st.none()}),
    st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "tool"]), "content": bad_contents}),
    st.fixed_dictionaries({"role": st.just("user"), "content": text, "id": bad_ids}),
    st.fixed_dictionaries({"role": st.just("user"), "content": text, "name": bad_names}),
    st.fixed_dictionaries({"role": st.just("user"), "content": text, "speaker": bad_names}),
    st.fixed_dictionaries(
        {"role": st.sampled_from(["assistant", "ai"]), "content": text, "tool_calls": bad_tool_calls()}
    ),
    st.fixed_dictionaries(
        {"role": st.sampled_from(["user", "tool"]), "content": text, "tool_calls": some_calls}
    ),
    st.fixed_dictionaries({"role": st.just("tool"), "content": text, "tool_call_id": junk}),
    st.builds(lambda t: ChatMessage(role="user", content=t), text),
    st.builds(lambda t: FunctionMessage(name="f", content=t), text),
    ids.map(lambda i: RemoveMessage(id=i)),
    st.builds(lambda t, n: HumanMessage(t, name=n), text, bad_names.filter(lambda n: isinstance(n, str))),
    bad_tool_calls(none_id_is_bad=False).map(lambda c: AIMessage.model_construct(content="x", tool_calls=c)),
    bad_contents.map(lambda c: HumanMessage.model_construct(content=c)),
)
# A speaker's name as the role: read with per="message", refused with per="exchange".
unknown_roles = st.fixed_dictionaries({"role": speakers, "content": text})


def _undated(value: Any) -> bool:
    return parse_time(value) is None and not (value is None or (isinstance(value, str) and not value.strip()))


bad_dates = st.one_of(
    junk.filter(_undated),  # a number may be epoch seconds (1980-2100)
    st.text(max_size=12).filter(_undated),
    st.sampled_from(["not a date", "2023-13-45", "yesterday", "05/06/2023", "May 2023", "2023/05/21 (Mon)"]),
)
bad_sessions = st.one_of(
    st.fixed_dictionaries({"messages": not_lists}),
    st.fixed_dictionaries({"messages": st.just([]), "date": bad_dates}),
    st.fixed_dictionaries({"messages": st.just([]), "id": bad_names}),
    st.builds(
        lambda k, v: {"messages": [], k: v},
        st.text(max_size=6).filter(lambda k: k not in {"messages", "date", "id"}),
        json_values,
    ),
)
bad_histories = st.one_of(
    scalars,
    st.none(),
    st.text(max_size=8),
    st.fixed_dictionaries(
        {"messages": st.lists(valid_messages("exchange"), max_size=2)}
    ),  # a session, unlisted
    st.fixed_dictionaries({"role": st.just("user"), "content": text}),  # a message, unlisted
    text.map(HumanMessage),
    st.frozensets(st.tuples(st.just("user"), text), min_size=1, max_size=2),
    st.sets(st.tuples(st.just("user"), text), max_size=2),
)


def as_container(items: list[Any], how: str) -> Any:
    if how == "tuple":
        return tuple(items)
    if how == "iterator":
        return iter(items)
    return items


@st.composite
def poisoned(draw: st.DrawFn) -> tuple[Any, str, str]:
    """A history with one bad part among valid ones: (history, per, the place the error names)."""
    per = draw(st.sampled_from(["exchange", "message"]))
    how = draw(st.sampled_from(["list", "tuple", "iterator"]))
    case = draw(
        st.sampled_from(["history", "message", "exchange-role", "session", "in-session", "mixed", "raises"])
    )
    if case == "history":
        return draw(bad_histories), per, "history"
    if case in ("message", "exchange-role"):
        messages = draw(st.lists(valid_messages(per if case == "message" else "exchange"), max_size=5))
        at = draw(st.integers(0, len(messages)))
        messages.insert(at, draw(bad_messages if case == "message" else unknown_roles))
        return (
            as_container(messages, how),
            per if case == "message" else "exchange",
            f"history, message {at + 1}",
        )
    sessions = draw(st.lists(valid_sessions(per), min_size=1 if case == "mixed" else 0, max_size=3))
    if case == "session":
        at = draw(st.integers(0, len(sessions)))
        sessions.insert(at, draw(bad_sessions))
        return as_container(sessions, how), per, f"history, session {at + 1}"
    if case == "in-session":
        messages = draw(st.lists(valid_messages(per), max_size=4))
        at = draw(st.integers(0, len(messages)))
        messages.insert(at, draw(bad_messages))
        s = draw(st.integers(0, len(sessions)))
        sessions.insert(
            s, {"messages": as_container(messages, draw(st.sampled_from(["list", "tuple"]))), "date": None}
        )
        return as_container(sessions, how), per, f"history, session {s + 1}, message {at + 1}"
    if case == "mixed":  # a message among sessions
        at = draw(st.integers(0, len(sessions)))
        sessions.insert(at, {"role": "user", "content": draw(text)})
        return as_container(sessions, how), per, f"history, item {at + 2 if at == 0 else at + 1}"
    messages = draw(st.lists(valid_messages(per), max_size=4))

    def reads_then_fails() -> Iterator[Any]:
        yield from messages
        raise OSError("the log file went away")

    return reads_then_fails(), per, "history"


# --------------------------------------------------------------------------- ids

not_ids = st.one_of(
    st.none(),
    scalars,
    st.uuids(),
    st.lists(st.text(max_size=3), max_size=2),
    st.dictionaries(st.text(max_size=3), st.text(max_size=3), max_size=1),
    st.just(""),
    st.builds(lambda a, c: a + c, st.text(max_size=3), st.sampled_from([".", "\n", "\x00", "\ud800"])),
)
