"""Several nova-compute services in one process, for ``up --nodes``.

``python -m devcloud.compute_pool --layout etc/nodes.json --hosts
compute-000,compute-001 --config-file nova.conf [--config-file cell2.conf]``

Each host is a compute service of its own (``Service.create(binary=
"nova-compute", host=...)``): its own service record, RPC server, resource
tracker and nodes, as ``nova-compute`` starts one. They share the
interpreter, the configuration and the message queue connection pool, as in
Nova's functional harness. Every service runs Nova's fake driver with the
plugin's racks of nodes (``HpcMultiNodeFakeDriver``), grafted onto
``nova.virt.fake`` here because Nova loads drivers from there only.

oslo.service's launchers do not fit: under Nova's native-thread mode its
``ServiceLauncher`` forks a process per service (cotyledon), and
``nova.service.serve`` runs one. So the services start here one after
another and stop together on SIGTERM, as the harness does. Nova reads
``CONF.host`` while it builds and starts a service (the driver takes it for
its host), so it is set to each service's host for that, as the harness
sets it; a few periodic tasks and notifications read it later, and then see
the last service's host (the harness has the same limit).
"""

# Native threads, as nova-compute patches itself; before anything imports
# Nova's modules.
from nova import monkey_patch  # isort: skip

monkey_patch.patch(backend="threading")

import argparse  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
from collections.abc import Sequence  # noqa: E402

STOP_TIMEOUT = 30.0


def _parse(argv: Sequence[str]) -> tuple[argparse.Namespace, list[str]]:
    parser = argparse.ArgumentParser(
        prog="python -m devcloud.compute_pool",
        description="Run several nova-compute services, one per host, in this process.",
    )
    parser.add_argument("--layout", required=True, help="host -> node -> shape, as JSON")
    parser.add_argument("--hosts", required=True, help="comma-separated hosts to run")
    return parser.parse_known_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args, nova_args = _parse(sys.argv[1:] if argv is None else argv)
    hosts = [host for host in args.hosts.split(",") if host]

    import nova.conf
    import nova.db.main.api
    import nova.virt.fake
    import os_vif
    from nova import config, objects, service
    from nova.compute import rpcapi as compute_rpcapi
    from nova.conductor import rpcapi as conductor_rpcapi
    from nova.objects import base as objects_base
    from oslo_log import log as logging

    from hpc_nova_scheduler.demo import fake_driver

    conf = nova.conf.CONF
    config.parse_args([sys.argv[0], *nova_args])
    logging.setup(conf, "nova")
    log = logging.getLogger("devcloud.compute_pool")
    try:
        layout = fake_driver.load_nodes(args.layout)
    except ValueError as error:
        print(f"compute_pool: --layout: {error}", file=sys.stderr)
        return 2
    missing = [host for host in hosts if host not in layout]
    if not hosts or missing:
        named = missing or "(none)"
        print(f"compute_pool: --hosts: not in {args.layout}: {named}", file=sys.stderr)
        return 2
    fake_driver.NODES.update({host: layout[host] for host in hosts})
    nova.virt.fake.HpcMultiNodeFakeDriver = fake_driver.HpcMultiNodeFakeDriver
    conf.set_override("compute_driver", "fake.HpcMultiNodeFakeDriver")
    # A compute reaches the databases through the conductor only, and Nova
    # asks that it be run without their connections: with them, each
    # service's start looks up the minimum service version in every cell's
    # database directly (and is refused only once connected), and a few
    # pools of 25 services hold enough connections to exhaust MariaDB's 151.
    for group in ("database", "api_database"):
        conf.set_override("connection", None, group=group)

    # As nova-compute sets itself up: objects over RPC through the conductor.
    objects.register_all()
    os_vif.initialize()
    nova.db.main.api.DISABLE_DB_ACCESS = True
    objects_base.NovaObject.indirection_api = conductor_rpcapi.ConductorAPI()
    objects.Service.enable_min_version_cache()

    stopping = threading.Event()

    def _stop(signo, frame) -> None:
        stopping.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)

    started = []
    for host in hosts:
        if stopping.is_set():
            break
        conf.set_override("host", host)
        server = service.Service.create(
            binary="nova-compute",
            host=host,
            topic=compute_rpcapi.RPC_TOPIC,
            topic_alt=compute_rpcapi.RPC_TOPIC_ALT,
        )
        try:
            server.start()
        except Exception:
            log.exception("nova-compute %s failed to start", host)
            stopping.set()
            _stop_all(started, log)
            return 1
        started.append(server)
        log.info("nova-compute %s started (%d of %d)", host, len(started), len(hosts))
    if not stopping.is_set():
        log.info("all %d nova-compute services started", len(started))
    stopping.wait()
    log.info("stopping %d nova-compute services", len(started))
    _stop_all(started, log)
    return 0


def _stop_all(started: list, log) -> None:
    """Stop the services together: each stop waits for its RPC server."""
    threads = [
        threading.Thread(target=_stop_one, args=(server, log), daemon=True) for server in started
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(STOP_TIMEOUT)


def _stop_one(server, log) -> None:
    try:
        server.stop()
    except Exception:
        log.exception("nova-compute %s did not stop cleanly", server.host)


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Nova's helper threads (executors, the message queue's) need not end
    # by themselves once the services stopped; nothing is left to flush.
    os._exit(code)
