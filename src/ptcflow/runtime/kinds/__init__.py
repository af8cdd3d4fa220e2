"""Directive kinds: how the local runtime performs each directive."""
