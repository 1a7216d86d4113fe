"""``hpc-scheduler-collector``: parse nova.conf as Nova's services do, launch the service.

It runs on each compute host: ``hpc-scheduler-collector --config-file
/etc/nova/nova.conf``. It needs the plugin database
(``[hpc_scheduler] connection``) and its own ``[hpc_collector]`` options;
it does not use Nova's databases or message queue.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

PROG = "hpc-scheduler-collector"


def _bad_configuration(error: Exception) -> int:
    print(f"{PROG}: {' '.join(str(error).split())}", file=sys.stderr)
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv if argv is None else argv)
    from oslo_config import cfg

    from hpc_nova_scheduler import compat

    try:
        compat.monkey_patch(backend="threading")
    except cfg.Error as error:
        return _bad_configuration(error)

    from oslo_log import log as logging
    from oslo_service import service as oslo_service

    from hpc_nova_scheduler import conf as hpc_conf
    from hpc_nova_scheduler.collector.service import CollectorService

    conf = hpc_conf.CONF
    hpc_conf.register_collector_opts(conf)
    try:
        compat.parse_nova_args(argv, prog=PROG)
        # oslo.config checks a value when it is read: read them all here,
        # so that a bad one is a line now, not a dead worker later.
        group = conf[hpc_conf.COLLECTOR_GROUP_NAME]
        for option in hpc_conf.collector_opts:
            getattr(group, option.dest)
        host = group.host or conf.host
    except (cfg.Error, OSError, ValueError) as error:
        return _bad_configuration(error)
    if not conf.hpc_scheduler.connection:
        print(f"{PROG}: [{hpc_conf.GROUP_NAME}] connection is not set", file=sys.stderr)
        return 2
    if not host:
        print(
            f"{PROG}: [{hpc_conf.COLLECTOR_GROUP_NAME}] host and [DEFAULT] host are not set",
            file=sys.stderr,
        )
        return 2
    logging.setup(conf, PROG)
    launcher = oslo_service.launch(conf, CollectorService(conf), workers=1, restart_method="reload")
    return launcher.wait() or 0


if __name__ == "__main__":
    sys.exit(main())
