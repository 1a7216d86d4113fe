"""Interference models: a common interface, a registry, and seed 003's rule."""
