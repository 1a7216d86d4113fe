"""``fairshare allocate | show | report`` against the in-process Nova.

The unit tests hand ``allocate`` its compute nodes; here they come from
Nova's cell database and the ``hpc:`` tags from its API database's
aggregates, as on a real control plane (the configuration is the
harness's: loading nova.conf is what ``reconcile`` does too).
"""

from __future__ import annotations

import io
import json
import os

import fixtures

from hpc_nova_scheduler.cmd import cli, common, fairshare_live
from hpc_nova_scheduler.demo.fake_driver import Shape
from hpc_nova_scheduler.fairshare.runs import TaskRun
from tests.functional import base

AMD = ["a1", "a2"]
INTEL = ["i1", "i2"]


class TestFairshareCommandsOnNova(base.HpcTestCase):
    HOSTS = {name: Shape(vcpus=8, cpu_model="EPYC") for name in AMD} | {
        name: Shape(vcpus=8, cpu_model="Xeon") for name in INTEL
    }
    CPU_GROUPS = {"amd": AMD, "intel": INTEL}

    def setUp(self) -> None:
        super().setUp()
        self.conf_file = os.path.join(self.useFixture(fixtures.TempDir()).path, "nova.conf")
        with open(self.conf_file, "w", encoding="utf-8") as stream:
            stream.write("[hpc_scheduler]\nfairness_policy = pa-rr\n")
        self.project = self.api.project_id
        self.database.import_runs(
            [
                TaskRun("blast", "amd", 100.0),
                TaskRun("blast", "intel", 200.0),
                TaskRun("gene", "amd", 200.0),
                TaskRun("gene", "intel", 100.0),
            ]
        )
        self.database.set_share(self.project, 1.0)
        self.database.set_share("p-gene", 1.0)

    def command(self, *argv: str) -> tuple[int, str, str]:
        """A fairshare command; allocate reads the harness's Nova."""
        args = cli.build_parser().parse_args(
            ["--config-file", self.conf_file, "--connection", self.db_url, "fairshare", *argv]
        )
        out, err = io.StringIO(), io.StringIO()
        args.err = err
        handler = args.func
        if argv[0] == "allocate":
            handler = fairshare_live.allocate_handler(lambda _: fairshare_live.read_nova())
        code = common.run(args, handler, out, err)
        return code, out.getvalue(), err.getvalue()

    def json_of(self, *argv: str) -> dict:
        code, out, err = self.command(*argv, "--format", "json")
        self.assertEqual(0, code, err)
        return json.loads(out)

    def test_allocate_show_and_report_from_nova(self) -> None:
        flavor = self.hpc_flavor(vcpus=2, app_class="AsyncHPC", cache_score=1, app_name="blast")
        servers = self.launch(flavor, count=2)
        self.assertEqual({"ACTIVE"}, {s["status"] for s in servers})
        hosts = self.hosts_of(servers)

        found = self.json_of("allocate")
        self.assertEqual(1, found["generation"])
        self.assertEqual(
            {
                "amd": {"nodes": 2, "cores_per_node": 8, "cores": 16},
                "intel": {"nodes": 2, "cores_per_node": 8, "cores": 16},
            },
            found["platforms"],
        )
        # The project's VMs run blast: it asks for their 4 cores, on amd first.
        self.assertEqual({"amd": 4}, found["allocation"][self.project])
        self.assertEqual(1, self.database.latest_generation().number)

        shown = self.json_of("show", "--project", self.project)["projects"][self.project]
        self.assertEqual("blast", shown["application"])
        in_use = {p: v["in_use"] for p, v in shown["platforms"].items()}
        expected = {"amd": 0, "intel": 0}
        for host, count in hosts.items():
            expected["amd" if host in AMD else "intel"] += 2 * count
        self.assertEqual(expected, in_use)
        self.assertEqual(0.5, shown["platforms"]["intel"]["relative_throughput"])

        report = self.json_of("report")
        self.assertEqual([self.project], report["counted"])
        self.assertEqual(4, report["projects"][self.project]["cores_in_use"])

    def test_a_host_tagged_into_two_platforms_writes_nothing(self) -> None:
        self.tag_hosts("also-intel", {"hpc:cpu_group": "intel"}, ["a1"])
        code, out, err = self.command("allocate")
        self.assertEqual((1, ""), (code, out), err)
        self.assertIn("host a1 is in two platforms by hpc:cpu_group: amd, intel", err)
        self.assertEqual(1, len(err.strip().splitlines()), err)
        self.assertIsNone(self.database.latest_generation())
        # hpc:platform overrides the groups: the host is in one platform again.
        self.tag_hosts("special", {"hpc:platform": "special"}, ["a1"])
        found = self.json_of("allocate", "--dry-run")
        self.assertEqual(
            {"amd": 8, "intel": 16, "special": 8},
            {name: p["cores"] for name, p in found["platforms"].items()},
        )
        self.assertIsNone(self.database.latest_generation())
