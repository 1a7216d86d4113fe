"""``hpc-scheduler-agent``: the service that owns the plugin's background work.

nova-scheduler's filter answers from state; the long-running work that
keeps that state true runs here, in a service of its own (as Blazar,
Watcher and Synergy run theirs), which systemd or devstack start, stop and
reload: the sweep of ``app_running`` and the fallback copy
(:mod:`.sweep`), and seed 002's allocator (:mod:`.allocator`). Each run of
a task is recorded in the plugin database (``agent_tasks``), which
``hpc-nova-scheduler agent status`` reads.
"""
