"""devstack/plugin.sh: bashate-clean, and configuring what tools/cloud.py does."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import testtools

from devcloud import config
from devcloud.layout import Run

ROOT = Path(__file__).resolve().parents[2]
DEVSTACK = ROOT / "devstack"
BASHATE = Path(sys.executable).parent / "bashate"

#: Options the plugin owns in nova.conf, by section.
OWNED = {
    "filter_scheduler": {"available_filters", "weight_classes", "enabled_filters"},
    "scheduler": {"workers", "max_attempts"},
    "hpc_scheduler": {
        "connection",
        "database_failure_policy",
        "cache_threshold",
        "sync_cache_threshold",
        "interference_tolerance",
    },
}


def _plugin_settings(environment: str = "") -> dict[tuple[str, str], list[str]]:
    """Run configure_hpc_nova_scheduler with devstack's ini helpers stubbed."""
    script = f"""
        set -e
        {environment}
        get_or_create_user() {{ echo "user|$1|$2|$3"; }}
        get_or_add_user_project_role() {{ echo "role|$1|$2|$3"; }}
        iniset() {{ echo "set|$2|$3|$4"; }}
        iniadd() {{ echo "add|$2|$3|$4"; }}
        database_connection_url() {{ echo "mysql+pymysql://root@127.0.0.1/$1"; }}
        DATABASE_TYPE=mysql DATABASE_HOST=127.0.0.1
        is_service_enabled() {{ return 1; }}
        enable_service() {{ :; }}
        DEST=/opt/stack NOVA_CONF=/etc/nova/nova.conf
        source {DEVSTACK / "settings"}
        source {DEVSTACK / "plugin.sh"}
        configure_hpc_nova_scheduler
    """
    done = subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, check=True, timeout=30
    )
    found: dict[tuple[str, str], list[str]] = {}
    for line in done.stdout.splitlines():
        if line.startswith(("user|", "role|")):
            found.setdefault(("keystone", line.split("|")[0]), []).append(line)
            continue
        action, section, key, value = line.split("|")
        values = found.setdefault((section, key), [])
        if action == "set":
            values.clear()
        values.append(value)
    return found


def _cloud_settings() -> dict[tuple[str, str], list[str]]:
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "etc").mkdir()
        run = Run(
            folder=folder,
            run_id="x",
            mysql="mysql+pymysql://root@127.0.0.1",
            rabbit="rabbit://guest:guest@127.0.0.1:5672",
            computes=8,
            scheduler_workers=2,
            plugin=True,
            ports={"placement": 1, "glance": 2, "neutron": 3, "nova": 4},
        )
        found: dict[tuple[str, str], list[str]] = {}
        section = None
        for line in config.nova_conf(run).read_text().splitlines():
            if line.startswith("["):
                section = line.strip("[]")
            elif " = " in line:
                key, value = line.split(" = ", 1)
                found.setdefault((section, key), []).append(value)
        return found


class TestDevstackPlugin(testtools.TestCase):
    def test_bashate_finds_nothing(self) -> None:
        for path, ignore in ((DEVSTACK / "plugin.sh", []), (DEVSTACK / "settings", ["-i", "E005"])):
            done = subprocess.run(
                [str(BASHATE), "-e", "E*", *ignore, str(path)],
                capture_output=True,
                text=True,
                env={**os.environ},
                timeout=60,
            )
            self.assertEqual(0, done.returncode, done.stdout + done.stderr)

    def test_it_sets_what_the_cloud_tool_sets(self) -> None:
        plugin = _plugin_settings()
        cloud = _cloud_settings()
        for section, keys in OWNED.items():
            for key in keys:
                self.assertIn((section, key), plugin, f"plugin.sh does not set [{section}] {key}")
                if key in ("connection",):
                    continue
                self.assertEqual(
                    cloud[(section, key)], plugin[(section, key)], f"[{section}] {key}"
                )
        self.assertEqual(
            {(s, k) for s, keys in OWNED.items() for k in keys},
            {key for key in plugin},
        )

    def test_reclaim_gives_the_agent_a_keystone_user_of_its_own(self) -> None:
        plugin = _plugin_settings(
            "HPC_FAIRSHARE_RECLAIM=shelve SERVICE_PASSWORD=pw SERVICE_PROJECT_NAME=service "
            "KEYSTONE_SERVICE_URI=http://keystone/identity REGION_NAME=RegionOne"
        )
        self.assertEqual(["shelve"], plugin[("hpc_scheduler", "fairshare_reclaim")])
        self.assertEqual(["300"], plugin[("hpc_scheduler", "fairshare_reclaim_grace")])
        self.assertEqual(["user|hpc-scheduler-agent|pw|default"], plugin[("keystone", "user")])
        self.assertEqual(["role|admin|hpc-scheduler-agent|service"], plugin[("keystone", "role")])
        agent = {
            key: value
            for (section, key), value in plugin.items()
            if section == "hpc_scheduler_agent"
        }
        self.assertEqual(["password"], agent["auth_type"])
        self.assertEqual(["hpc-scheduler-agent"], agent["username"])
        self.assertEqual(["http://keystone/identity"], agent["auth_url"])

    def test_it_runs_the_agent_with_nova_conf_and_stops_it(self) -> None:
        script = f"""
            set -e
            get_python_exec_prefix() {{ echo /usr/local/bin; }}
            run_process() {{ echo "run|$1|$2"; }}
            stop_process() {{ echo "stop|$1"; }}
            is_service_enabled() {{ return 1; }}
            enable_service() {{ echo "enable|$1"; }}
            DEST=/opt/stack NOVA_CONF=/etc/nova/nova.conf
            source {DEVSTACK / "settings"}
            source {DEVSTACK / "plugin.sh"}
            start_hpc_scheduler_agent
            stop_hpc_scheduler_agent
        """
        done = subprocess.run(
            ["bash", "-c", script], capture_output=True, text=True, check=True, timeout=30
        )
        self.assertEqual(
            [
                "enable|hpc-nova-scheduler",
                "enable|hpc-scheduler-agent",
                "run|hpc-scheduler-agent|/usr/local/bin/hpc-scheduler-agent "
                "--config-file /etc/nova/nova.conf",
                "stop|hpc-scheduler-agent",
            ],
            done.stdout.splitlines(),
        )
