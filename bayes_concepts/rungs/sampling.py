"""Sampling rungs (being written)."""
