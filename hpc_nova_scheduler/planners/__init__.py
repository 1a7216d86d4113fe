"""Batch planners: whole batches of applications placed at once (seeds 004, 001, 000)."""
