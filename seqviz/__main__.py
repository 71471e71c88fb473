"""`python -m seqviz ...`: see seqviz/cli.py."""

import sys

from seqviz.cli import main

sys.exit(main())
