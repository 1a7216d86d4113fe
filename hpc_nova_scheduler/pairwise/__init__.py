"""Seed 001 (Zacarias et al.): pairwise degradation from counters, and pairing.

``forest`` (the random forest over two applications' counters, registered
as ``pair-forest``), ``fitting`` (fit and evaluate on measured pairs),
``matching`` (blossom and greedy pairing of a queue) and ``planner`` (pairing
as the batch planners ``blossom`` and ``greedy``). See README.rst.
"""
