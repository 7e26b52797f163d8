"""Make the tooling scripts in tests/tooling/ importable by their file names."""

import os
import sys

TOOLING_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

if TOOLING_DIR not in sys.path:
    sys.path.insert(0, TOOLING_DIR)
