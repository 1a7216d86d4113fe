"""Seed 002 (Hwang et al.): fairness-aware sharing of heterogeneous platforms.

So far: the platform and co-runner affinity metrics of section 4
(:mod:`.affinity`) and the run files they are computed from (:mod:`.runs`).
The two-level allocation policies and the many-task simulator are to come;
README.rst in this folder says what is built and what is not.
"""
