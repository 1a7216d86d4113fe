"""Seed 002 (Hwang et al.): fairness-aware two-level sharing of heterogeneous platforms.

The affinity metrics (:mod:`.affinity`), the first and second levels
(:mod:`.first_level`, :mod:`.second_level`), weights and decayed usage
(:mod:`.usage`), the allocator that runs both (:mod:`.allocator`), the
production anchors (:mod:`.anchors`) and the many-task simulator
(:mod:`.simulator`, :mod:`.fluid`) with its evaluation grid
(:mod:`.experiments`). README.rst in this folder lists the readings of the
paper and the numbers reproduced.
"""
