"""Seed 000 (Kim et al.): run time on host types next to co-runners (and, later, annealing)."""
