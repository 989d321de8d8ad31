"""Synthesis: L partially synthetic implicates from a fit, in memory or streamed."""
