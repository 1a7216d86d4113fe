"""A real OpenStack control plane on one machine, for trials and stress.

``tools/cloud.py`` drives it: Placement, Glance and the Nova API behind
gunicorn, nova-conductor, nova-scheduler with several workers and
nova-compute processes on Nova's fake driver, each a process of its own,
on MariaDB and RabbitMQ, set up with the commands an operator runs. Nothing
here runs inside nova-scheduler; the plugin is tried through it.
"""
