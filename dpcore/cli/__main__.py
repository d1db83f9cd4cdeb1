"""``python -m dpcore.cli``: the ``dpcore`` command."""
import sys

from dpcore.cli import main

sys.exit(main())
