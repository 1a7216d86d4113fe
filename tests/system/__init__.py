"""Tests of the real control plane (tools/cloud.py) on MariaDB and RabbitMQ."""
