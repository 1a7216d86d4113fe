"""Seed 001 (Zacarias et al.): pairwise degradation from counters (and, later, pairing)."""
