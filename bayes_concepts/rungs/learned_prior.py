"""Learned-prior rungs (being written)."""
