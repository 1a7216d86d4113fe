"""Characterisation: profiles and pairwise slowdowns measured on this machine."""
