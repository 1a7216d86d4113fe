"""Seed 004 (Alves): the IVMP interference model (and, later, ILS placement)."""
