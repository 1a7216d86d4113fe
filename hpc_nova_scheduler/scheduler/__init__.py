"""Adapters that run inside nova-scheduler."""
