"""Verification of an analyst's model on the confidential data (``synthgeo verify``).

The analyst develops on the public file and asks the agency whether the result holds on the
confidential records; the answer is only verification measures per coefficient (CI overlap,
sign and significance agreement), differentially private by default, with ε charged to the
analyst (docs/risk-and-utility.md, "Verification"). One job per module: :mod:`.analysis`
(the request and its checks), :mod:`.measures` (the measures), :mod:`.privacy` (the
mechanism), :mod:`.budget` (the ε store and audit log), :mod:`.api` (the whole request).
"""
