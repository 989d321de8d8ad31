"""Inference: NUTS (nutpie) and the conjugate grid route, one fit type.

Both return :class:`synthgeo.inference.result.GPFit`; method: ``docs/inference.md``.
"""
