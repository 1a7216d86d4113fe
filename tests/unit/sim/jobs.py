"""Hand-made jobs for the simulator tests."""

from __future__ import annotations

from hpc_nova_scheduler.sim import swf


def job(
    job_id: int = 1,
    submit: float = 0.0,
    run: float = 10.0,
    procs: int = 1,
    memory_mb: float | None = None,
    requested: float = -1,
) -> swf.Job:
    return swf.Job(
        job_id=job_id,
        submit=submit,
        wait=0,
        run_time=run,
        processors=procs,
        memory_mb=memory_mb,
        requested_time=requested,
        user=1,
        queue=1,
        line=job_id,
    )
