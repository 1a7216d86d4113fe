"""Seed 000 (Kim et al.): run time on host types next to co-runners, and annealing.

``trees`` (bagged regression trees per application family, registered as
``runtime-trees``), ``fitting`` (fit and evaluate on measured runs),
``annealing`` (candidate virtual-cluster configurations and simulated
annealing), ``planner`` (annealing as the
batch planner ``annealing``) and ``shaped`` (a seeded dataset shaped like the
paper's campaign, whose data were not published). See README.rst.
"""
