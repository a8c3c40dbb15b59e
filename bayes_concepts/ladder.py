"""The oracle ladder (being written)."""
