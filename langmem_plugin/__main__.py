"""``python -m langmem_plugin`` runs the ``langmem-plugin`` command."""

import sys

from langmem_plugin.cli import main

sys.exit(main())
