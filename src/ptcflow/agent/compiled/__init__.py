"""Compiled agents: a SubAgent's program frozen into a function."""
