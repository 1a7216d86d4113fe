"""``hpc-scheduler-agent``: parse the configuration as Nova's services do, launch the service.

The agent reads nova.conf (Nova's API and cell databases, for instances
and compute nodes, as nova-scheduler reads them) and the plugin's options
in ``[hpc_scheduler]``: ``hpc-scheduler-agent --config-file
/etc/nova/nova.conf``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def _bad_configuration(error: Exception) -> int:
    print(f"hpc-scheduler-agent: {' '.join(str(error).split())}", file=sys.stderr)
    return 2


def reclaim_problem(conf) -> str | None:
    """Why reclaim cannot work with these options (no credentials for Nova's API), or None."""
    from oslo_config import cfg

    from hpc_nova_scheduler import conf as hpc_conf

    try:
        mode = conf.hpc_scheduler.fairshare_reclaim
    except (ValueError, cfg.Error) as error:
        return f"[{hpc_conf.GROUP_NAME}] fairshare_reclaim: {' '.join(str(error).split())}"
    if mode == hpc_conf.RECLAIM_OFF:
        return None
    if not conf[hpc_conf.AGENT_GROUP_NAME].auth_type:
        return (
            f"[{hpc_conf.AGENT_GROUP_NAME}] auth_type is not set: fairshare_reclaim = {mode} "
            "needs the agent's own credentials for Nova's API"
        )
    return None


def placement_problem(conf) -> str | None:
    """Why the idle-traits task cannot reach Placement with these options, or None."""
    from oslo_config import cfg

    from hpc_nova_scheduler import conf as hpc_conf

    try:
        interval = conf.hpc_scheduler.idle_trait_interval
    except (ValueError, cfg.Error) as error:
        return f"[{hpc_conf.GROUP_NAME}] idle_trait_interval: {' '.join(str(error).split())}"
    if interval <= 0:
        return None
    if not conf.placement.auth_type:
        return (
            f"[placement] auth_type is not set: idle_trait_interval = {interval} needs "
            "nova.conf's credentials for Placement, as nova-scheduler uses them"
        )
    return None


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv if argv is None else argv)
    # Nova's choice of concurrency backend, made before anything imports
    # oslo.service: native threads unless nova.conf or the environment
    # asks for eventlet, as for nova-scheduler (it reads the files named on
    # the command line, sys.argv).
    from oslo_config import cfg

    from hpc_nova_scheduler import compat

    try:
        compat.monkey_patch(backend="threading")
    except cfg.Error as error:
        return _bad_configuration(error)

    import oslo_messaging
    from nova import objects
    from oslo_log import log as logging
    from oslo_service import service as oslo_service

    from hpc_nova_scheduler import conf as hpc_conf
    from hpc_nova_scheduler.agent.service import AgentService
    from hpc_nova_scheduler.agent.tasks import agent_name

    conf = hpc_conf.CONF
    hpc_conf.register_agent_opts(conf)
    try:
        compat.parse_nova_args(argv, prog="hpc-scheduler-agent")
    except (cfg.Error, OSError) as error:
        return _bad_configuration(error)
    if not conf.hpc_scheduler.connection:
        print(
            f"hpc-scheduler-agent: [{hpc_conf.GROUP_NAME}] connection is not set",
            file=sys.stderr,
        )
        return 2
    problem = reclaim_problem(conf) or placement_problem(conf)
    if problem is not None:
        print(f"hpc-scheduler-agent: {problem}", file=sys.stderr)
        return 2
    logging.setup(conf, "hpc-scheduler-agent")
    # Loading a cell mapping reads [DEFAULT] transport_url, which only RPC's
    # set-up registers: register it, though the agent sends no message.
    oslo_messaging.TransportURL.parse(conf)
    objects.register_all()
    launcher = oslo_service.launch(
        conf, AgentService(agent_name()), workers=1, restart_method="reload"
    )
    return launcher.wait() or 0


if __name__ == "__main__":
    sys.exit(main())
