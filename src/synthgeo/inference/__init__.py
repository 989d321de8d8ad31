"""Inference: NUTS (nutpie) and the conjugate grid route, both returning one fit type (:class:`synthgeo.inference.result.GPFit`)."""
