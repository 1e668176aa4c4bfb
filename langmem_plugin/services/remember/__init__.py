"""Remember: what a finished exchange leaves in memory.

- :mod:`.episodes`: the exchange kept as an episode (and its passages) after the model answers
  (:class:`RememberConfig`, :func:`remember_steps`).
- :mod:`.writer`: the background writer that stores episodes off the user's turn.
- :mod:`.history_import`: chat-log import through the same writer, one conversation or a
  stream of many (bounded memory, resumable, with progress).

Other rooms import from here only (``tests/test_package.py`` pins it).
"""

from __future__ import annotations

from langmem_plugin.services.remember.episodes import (
    EPISODE_CATEGORY,
    Episode,
    RememberConfig,
    remember_steps,
)
from langmem_plugin.services.remember.exchanges import episode_from_messages
from langmem_plugin.services.remember.history_import import (
    History,
    ImportProgress,
    ImportReport,
    aimport_histories,
    aimport_history,
    import_histories,
    import_history,
)
from langmem_plugin.services.remember.writer import EpisodeWriter, FailedWrite

__all__ = [
    "EPISODE_CATEGORY",
    "Episode",
    "EpisodeWriter",
    "FailedWrite",
    "History",
    "ImportProgress",
    "ImportReport",
    "RememberConfig",
    "aimport_histories",
    "aimport_history",
    "episode_from_messages",
    "import_histories",
    "import_history",
    "remember_steps",
]
