import os
import sys

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "..", "acp"))
sys.path.insert(0, HERE)

from support import acp_env  # noqa: E402,F401 - the one definition (support.py)

