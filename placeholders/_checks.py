"""Argument checks written once: `placeholders` uses them, and `index` imports them from here
(the lowest room that validates arguments) instead of writing the rule again."""

from __future__ import annotations

from ._errors import PlaceholderError

__all__ = ["check_int"]


def check_int(
    name: str,
    value: object,
    *,
    minimum: int,
    maximum: int | None = None,
    error: type[Exception] = PlaceholderError,
) -> int:
    """``value`` when it is an int from ``minimum`` to ``maximum`` (no upper bound when None).

    A bool is refused: ``True`` is an int to Python but never a count a caller meant.

    Raises:
        error: ``value`` is not an int, is a bool, or is out of range; the message names
            ``name``, the rule and the value.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise error(f"{name} must be an int, got {type(value).__name__}")
    if maximum is None and value < minimum:
        raise error(f"{name} must be >= {minimum}, got {value}")
    if maximum is not None and not minimum <= value <= maximum:
        raise error(f"{name} must be from {minimum} to {maximum}, got {value}")
    return value
