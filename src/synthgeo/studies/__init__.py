"""Studies: restricted vs unrestricted vs suppressed, risk-utility frontier, paper design."""
