"""Command line entry points."""

import sys

if "demo" in sys.argv[1:]:
    # Nova's patching announces that eventlet is deprecated (a warning on
    # import and a log line), before the demo's own output and even before a
    # usage error: noise to the demo's user, who cannot act on it.
    import logging
    import warnings

    warnings.filterwarnings("ignore", message=r"\s*Eventlet is deprecated")
    logging.getLogger("nova.monkey_patch").setLevel(logging.ERROR)

    # The demo runs Nova's functional harness, whose services are eventlet
    # green threads. oslo.db, which every command imports, keeps its
    # transactions in thread-local state: created before Nova patches the
    # standard library, that state would be shared by all green threads and
    # builds would fail at random under load ("Can't upgrade a READER
    # transaction to a WRITER"). Patch first, as Nova's own test package does.
    from hpc_nova_scheduler import compat

    compat.monkey_patch()
