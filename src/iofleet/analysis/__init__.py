"""What the numbers mean: steady state, stragglers, skew, scaling, saturation, Little's law and the diagnostics."""
