"""The JSON-mode strategy: one structured answer per turn."""
