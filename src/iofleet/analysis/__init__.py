"""What the numbers mean: stragglers (more with later issues)."""
