"""HPC-aware VM placement for OpenStack Nova.

The package is layered; every import points down (doc/source/contributor/architecture.rst,
checked by tests/unit/test_architecture.py):

1. helpers: ``atomicfile``, ``strictjson``, ``resources``, ``conf``, ``plugins``;
2. ``core``: seed 003's engine and the protocols every system implements;
3. shared: ``datafiles``, ``interference``, ``planners``, ``db``, ``characterise``;
4. research systems, one folder a paper, never importing each other:
   ``ivmp`` (seed 004), ``pairwise`` (seed 001), ``runtime`` (seed 000),
   ``fairshare`` (seed 002);
5. adapters: ``compat`` (what differs between Nova releases), ``api``,
   ``scheduler``, ``agent``, ``live``, ``sim``, ``demo``, ``cmd``.

A new system is a new folder on floor 4 plus entry points in setup.cfg.
"""
