"""Subscription patterns: dot-separated signal types with ``*`` and ``**`` wildcards.

A ``*`` segment matches exactly one segment and a ``**`` segment matches any number of
segments (zero included). Patterns are checked and split once, when subscribing.
"""

from __future__ import annotations

from ptcflow.errors import UsageError

__all__ = ("compile_pattern", "matches")


def compile_pattern(pattern: str) -> tuple[str, ...]:
    """Check a subscription pattern and split it into segments.

    Args:
        pattern: dot-separated segments; ``*`` is one segment, ``**`` any number.

    Returns:
        The segments, ready for matching.

    Raises:
        UsageError: the pattern is empty, has an empty segment (``"ai..tool"``) or a
            wildcard inside a segment (``"ai.to*"``).

    Example:
        >>> compile_pattern("ai.tool.*")
        ('ai', 'tool', '*')
    """
    if not isinstance(pattern, str) or not pattern:
        raise UsageError(
            f"subscription pattern must be a non-empty string, got {pattern!r}; "
            'use "**" to receive every signal'
        )
    segments = tuple(pattern.split("."))
    for seg in segments:
        if not seg:
            raise UsageError(f"subscription pattern {pattern!r} has an empty segment")
        if "*" in seg and seg not in ("*", "**"):
            raise UsageError(
                f"subscription pattern {pattern!r}: wildcards must be whole segments "
                f'("*" for one segment, "**" for any number), not {seg!r}'
            )
    return segments


def matches(pattern: tuple[str, ...], segments: tuple[str, ...]) -> bool:
    """Return True when the compiled ``pattern`` matches a type split into ``segments``."""
    if not pattern:
        return not segments
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        return any(matches(rest, segments[i:]) for i in range(len(segments) + 1))
    if not segments:
        return False
    return (head == "*" or head == segments[0]) and matches(rest, segments[1:])
