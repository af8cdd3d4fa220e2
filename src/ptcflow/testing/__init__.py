"""Test helpers: a scripted model, a local model server, and tools to drive strategies.

Use :class:`ScriptedLLM` in place of a real model to test agents offline, with faults
injected per turn; :func:`open_model_server` serves the same scripts over the OpenAI and
Anthropic wire protocols, for code that builds its own provider; drive a strategy without
any runtime with :func:`run_strategy` and the signals a :class:`SignalFactory` builds.
"""

from __future__ import annotations

from ptcflow.testing._collect import SignalLog as SignalLog, collect_signals as collect_signals
from ptcflow.testing._drive import SignalFactory as SignalFactory, run_strategy as run_strategy
from ptcflow.testing._recording import Recording as Recording
from ptcflow.testing._scripted import ScriptedLLM as ScriptedLLM
from ptcflow.testing._server import (
    ModelServer as ModelServer,
    open_model_server as open_model_server,
)
from ptcflow.testing._turns import Fault as Fault, ScriptItem as ScriptItem, Turn as Turn
from ptcflow.testing._wire import RecordedRequest as RecordedRequest, ServerReply as ServerReply

__all__ = (
    "Fault",
    "ModelServer",
    "RecordedRequest",
    "Recording",
    "ScriptItem",
    "ScriptedLLM",
    "ServerReply",
    "SignalFactory",
    "SignalLog",
    "Turn",
    "collect_signals",
    "open_model_server",
    "run_strategy",
)
