"""How a long conversation is shrunk before it is sent: :class:`Compaction` (the settings)
and :class:`Summary` (what a summarizing compaction produced).

Both are data (frozen msgspec structs): a run's ``ai.request.started`` carries them, so a
journal replays with the same ``RunInfo``. What they mean is done by the strategies (pure)
with the helpers of :mod:`ptcflow.sessions`; see docs/conversations.md, "Compaction".
"""

from __future__ import annotations

import msgspec

from ptcflow.errors import ConfigError

__all__ = ("Compaction", "Summary")


class Compaction(
    msgspec.Struct, frozen=True, gc=False, kw_only=True, omit_defaults=True, repr_omit_defaults=True
):
    """When and how a run shrinks the history it sends to the model.

    The history passes the limit when it holds more than ``max_messages`` messages, or
    when its estimated tokens pass ``max_tokens`` (an estimate, not a tokenizer: 4 tokens
    per message plus one per 4 characters of its text, tool names and arguments). Then the
    run sends only the last ``keep_last`` messages (fewer when they would pass
    ``max_tokens``, and never starting with a tool result whose call is left out), and,
    with ``summarize=True``, a summary of the older part first: one model call the
    strategy makes before its own (an ``LLMGenerate`` like any other: journaled, traced,
    replayed). What is stored and returned (``step.messages``, a session) stays whole.

    Args:
        max_messages: the history's largest number of messages sent as is (``None``: no
            limit on the count).
        max_tokens: the history's largest estimated tokens sent as is (``None``: no limit
            on tokens).
        keep_last: how many of the last messages are kept word for word once the limit is
            passed (default: half of ``max_messages``, or 10 with ``max_tokens`` alone).
            ``0`` (only with ``summarize``) keeps the summary alone.
        summarize: summarize the messages left out with a model call, instead of only
            dropping them.
        summary_model: the model of that call (``"openai:gpt-4.1-mini"``); ``None``: the
            run's model.
        summary_prompt: the instructions of that call (``None``: ptcflow's own, asking
            for the facts, decisions, names and numbers the conversation established).

    Raises:
        ConfigError: no limit, a limit that is not a positive integer, ``keep_last`` not
            below ``max_messages``, or ``summary_model`` without ``summarize``.

    Example:
        >>> Compaction(max_messages=40, keep_last=10)
        Compaction(max_messages=40, keep_last=10)
        >>> Compaction(max_messages=10, keep_last=10)
        Traceback (most recent call last):
        ...
        ptcflow.errors.ConfigError: Compaction: keep_last (10) must be below max_messages (10): a compacted history must be shorter than the limit that triggers it
    """

    max_messages: int | None = None
    max_tokens: int | None = None
    keep_last: int | None = None
    summarize: bool = False
    summary_model: str | None = None
    summary_prompt: str | None = None

    def __post_init__(self) -> None:
        problems: list[str] = []
        for field in ("max_messages", "max_tokens"):
            value = getattr(self, field)
            if value is not None and (not _is_int(value) or value < 1):
                problems.append(f"{field} must be a positive integer or None, got {value!r}")
        if self.max_messages is None and self.max_tokens is None:
            problems.append(
                "give max_messages or max_tokens (or both): without a limit nothing is compacted"
            )
        summarize: object = self.summarize  # typed bool, but given by a caller
        if summarize is not True and summarize is not False:
            problems.append(f"summarize must be True or False, got {summarize!r}")
        keep = self.keep_last
        least = 0 if self.summarize is True else 1
        if keep is not None and (not _is_int(keep) or keep < least):
            problems.append(
                f"keep_last must be an integer >= {least}"
                + (" (0 keeps nothing; it needs summarize=True)" if least else "")
                + f", got {keep!r}"
            )
        elif not problems:
            if keep is None:
                keep = 10 if self.max_messages is None else max(self.max_messages // 2, least)
                msgspec.structs.force_setattr(self, "keep_last", keep)
            if self.max_messages is not None and keep >= self.max_messages:
                problems.append(
                    f"keep_last ({keep}) must be below max_messages ({self.max_messages}): "
                    "a compacted history must be shorter than the limit that triggers it"
                )
        for field in ("summary_model", "summary_prompt"):
            value = getattr(self, field)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                problems.append(f"{field} must be a non-empty string or None, got {value!r}")
            elif value is not None and self.summarize is not True:
                problems.append(f"{field} is only used with summarize=True")
        if problems:
            raise ConfigError("Compaction: " + "; ".join(problems))


class Summary(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """A summary of a conversation's first ``covers`` messages, made by a compaction.

    A later run reuses it (no model call) while the messages after it stay under the
    limit, and extends it (the summary and the messages that fell out since, not the whole
    conversation) when they pass it. ``digest`` identifies the messages it summarizes: a
    summary given with a history that does not start with them is not used.

    Attributes:
        text: the summary the model wrote.
        covers: how many messages, from the conversation's start, it summarizes.
        digest: a hash of those messages (SHA-256 of their JSON, hex).
    """

    text: str
    covers: int
    digest: str


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
