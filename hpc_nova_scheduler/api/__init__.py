"""Adapters that run inside nova-api."""
