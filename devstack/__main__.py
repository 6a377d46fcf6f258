"""`python -m devstack` (what `make run` runs): the whole stack in the foreground."""

import sys

from devstack.launcher import main

sys.exit(main())
