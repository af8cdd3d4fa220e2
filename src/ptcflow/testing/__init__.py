"""Test helpers: a scripted model and tools to drive strategies as plain functions.

Use :class:`ScriptedLLM` in place of a real model to test agents offline, with faults
injected per turn; drive a strategy without any runtime with :func:`run_strategy` and the
signals a :class:`SignalFactory` builds.
"""

from __future__ import annotations

from ptcflow.testing._collect import SignalLog as SignalLog, collect_signals as collect_signals
from ptcflow.testing._drive import SignalFactory as SignalFactory, run_strategy as run_strategy
from ptcflow.testing._recording import Recording as Recording
from ptcflow.testing._scripted import ScriptedLLM as ScriptedLLM
from ptcflow.testing._turns import Fault as Fault, ScriptItem as ScriptItem, Turn as Turn

__all__ = (
    "Fault",
    "Recording",
    "ScriptItem",
    "ScriptedLLM",
    "SignalFactory",
    "SignalLog",
    "Turn",
    "collect_signals",
    "run_strategy",
)
