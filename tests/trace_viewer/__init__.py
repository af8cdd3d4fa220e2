"""Tests of the trace viewer (``ptcflow.trace``, ``ptcflow trace``, ``examples/service``).

The example service's modules (``examples/service``) are imported by name, as they are when
the example runs.
"""

import sys
from pathlib import Path

_SERVICE = str(Path(__file__).resolve().parents[2] / "examples" / "service")
if _SERVICE not in sys.path:
    sys.path.insert(0, _SERVICE)
