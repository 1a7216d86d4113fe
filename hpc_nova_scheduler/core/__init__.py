"""Seed 003's placement engine, and the protocols every research system implements.

Seed 003 (Algorithm 1) is the engine every placement runs through:
application classes and thresholds (:mod:`.criteria`), homogeneity, rack
order and cosine bin packing (:mod:`.algorithm`), over a snapshot of the
cloud as columns (:mod:`.cluster`, :mod:`.columns`), with the claim-time
check (:mod:`.admission`). The Nova filter, the simulator and the planners
all call it; none has a placement logic of its own.

The research systems (``ivmp/``, ``pairwise/``, ``runtime/``, ``fairshare/``,
``topology/``) plug into it through protocols defined here: a
:class:`~.judge.HostJudge` admits shared hosts by an interference model and
says why it refuses one, a :class:`~.domains.DomainOrder` orders nested
domains (the topology system's BestFit, found by entry point), the
protocols of :mod:`.sharing` serve fair share, and a planner that cannot
place a batch raises a :class:`~.errors.CannotPlace`. See README.rst here.

Core imports no other folder of the package, and nothing of Nova: the
simulator and the planners run without it (doc/source/contributor/architecture.rst).
"""
