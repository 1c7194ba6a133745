"""``python -m jupyterlab_hubgrid.cli``: the ``hubgrid`` command."""

import sys

from . import main

sys.exit(main())
