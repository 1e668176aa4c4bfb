"""Where the benchmarks look for their data sets by default: inside the checkout, never beyond it.

No data set is shipped or downloaded. Put them in ``data/`` at the repository root (the commands
are run from there) — ``data/locomo/locomo10.json`` and ``data/realtalk/`` — or point
``LANGMEM_PLUGIN_DATA`` at the folder that holds ``locomo/`` and ``realtalk/``; ``--data`` always
overrides both. Where LoCoMo comes from, its licence and how to get it: docs/benchmarks.md.

>>> import os
>>> saved = os.environ.pop(DATA_ENV, None)
>>> str(locomo_path()), str(realtalk_path())
('data/locomo/locomo10.json', 'data/realtalk')
>>> os.environ[DATA_ENV] = "/datasets"
>>> str(locomo_path())
'/datasets/locomo/locomo10.json'
>>> _ = os.environ.pop(DATA_ENV) if saved is None else os.environ.update({DATA_ENV: saved})
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DATA_ENV", "data_dir", "locomo_path", "realtalk_path"]

#: The environment variable naming the folder that holds the data sets.
DATA_ENV = "LANGMEM_PLUGIN_DATA"


def data_dir() -> Path:
    """``$LANGMEM_PLUGIN_DATA``, else ``data`` (relative: the repository root the commands run from)."""
    return Path(os.environ.get(DATA_ENV) or "data")


def locomo_path() -> Path:
    """Where ``locomo10.json`` is looked for when no ``--data`` is given."""
    return data_dir() / "locomo" / "locomo10.json"


def realtalk_path() -> Path:
    """Where the REALTALK folder is looked for when no ``--data`` is given."""
    return data_dir() / "realtalk"
