"""Diagnostics of the confidential data before fitting (the at-risk rule)."""
