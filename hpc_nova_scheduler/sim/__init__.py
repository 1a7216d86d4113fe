"""Trace-driven simulation: real job logs replayed through the core engine."""
