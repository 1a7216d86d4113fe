"""HPC-aware VM placement for OpenStack Nova."""
