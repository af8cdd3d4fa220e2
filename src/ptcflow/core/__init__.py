"""The sans-I/O run core: the one API every driver shares."""
