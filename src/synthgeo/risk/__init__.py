"""Disclosure risk of the synthetic responses (within-ε, implicate-average attack)."""
