import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

from support import acp_env  # noqa: E402,F401 - the one definition (support.py)

