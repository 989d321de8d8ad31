"""Utility: Reiter (2003) combining rules, CI overlap, spatial utility."""
