"""Whether a strategy's state can change in place."""

from __future__ import annotations

from typing import Any

__all__ = ("FROZEN", "is_frozen")

FROZEN: dict[type[Any], bool] = {}
"""The classes :func:`is_frozen` has answered for (a caller on a hot path reads a known
class here, ``FROZEN.get(type(state))``, without calling it)."""
_FROZEN = FROZEN
_IMMUTABLE = (tuple, str, int, float, bool, bytes, frozenset, type(None))


def is_frozen(state: Any) -> bool:
    """True when ``state`` cannot change in place (a frozen msgspec struct or dataclass,
    a tuple, a scalar), so the same object means the same outcome.

    Example:
        >>> import msgspec
        >>> class S(msgspec.Struct, frozen=True):
        ...     n: int = 0
        >>> is_frozen(S()), is_frozen([])
        (True, False)
    """
    cls = type(state)
    known = _FROZEN.get(cls)
    if known is None:
        config = getattr(cls, "__struct_config__", None)
        params = getattr(cls, "__dataclass_params__", None)
        known = (
            (config is not None and bool(config.frozen))
            or (params is not None and bool(params.frozen))
            or cls in _IMMUTABLE
        )
        if len(_FROZEN) < 256:  # classes made on the fly must not grow it without bound
            _FROZEN[cls] = known
    return known
