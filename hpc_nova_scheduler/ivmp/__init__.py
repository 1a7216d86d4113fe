"""Seed 004 (Alves): the IVMP interference model, its refit, and ILS and MILP placement.

``model`` (models 3.8 and 3.10, registered as ``ivmp-base`` and ``ivmp``),
``fitting`` (least-squares refit for ``model fit``), ``ils`` (the multistart
Iterated Local Search, planner ``ils``) and ``exact`` (the same objective
solved by HiGHS, planner ``milp``). See README.rst.
"""
