"""``hpc-scheduler-collector``: interference measured on each compute host (issue 47)."""
