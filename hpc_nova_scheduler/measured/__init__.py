"""Interference measured on the hosts (issue 47): what the collector's samples mean."""
