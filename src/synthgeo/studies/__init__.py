"""Studies: restricted vs unrestricted vs suppressed comparison, the risk-utility frontier, the paper's simulated design."""
