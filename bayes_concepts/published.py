"""Published model results as data (being written)."""
