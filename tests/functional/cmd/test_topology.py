"""``topology show | check`` against the in-process Nova.

The unit tests hand the command its cloud; here the compute nodes come from
Nova's cell database (their vCPUs counted through Nova's own host state, as
nova-scheduler counts them) and the ``hpc:block`` and ``hpc:rack`` tags from
its API database's aggregates, as on a real control plane. The
configuration is the harness's (loading nova.conf is what ``reconcile``
does too).
"""

from __future__ import annotations

import io
import os

import fixtures

from hpc_nova_scheduler.cmd import cli, common, topology
from hpc_nova_scheduler.demo.fake_driver import Shape
from tests.functional import base

BLOCKS = {"b1": ["n1", "n2", "n3", "n4"], "b2": ["n5", "n6", "n7", "n8"]}
PNG = b"\x89PNG\r\n\x1a\n"


class TestTopologyCommandsOnNova(base.HpcTestCase):
    #: Two blocks of two racks of two hosts; n9 has no tag yet.
    HOSTS = {f"n{i}": Shape(vcpus=8) for i in range(1, 10)}
    RACKS = {"r1": ["n1", "n2"], "r2": ["n3", "n4"], "r3": ["n5", "n6"], "r4": ["n7", "n8"]}

    def setUp(self) -> None:
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.conf_file = os.path.join(self.dir, "nova.conf")
        with open(self.conf_file, "w", encoding="utf-8") as stream:
            stream.write("[hpc_scheduler]\ntopology_levels = block,rack\n")
        for block, hosts in BLOCKS.items():
            self.tag_hosts(f"block-{block}", {"hpc:block": block}, hosts)

    def command(self, *argv: str) -> tuple[int, str, str]:
        """A topology command reading the harness's Nova."""
        args = cli.build_parser().parse_args(["--config-file", self.conf_file, "topology", *argv])
        out, err = io.StringIO(), io.StringIO()
        args.err = err
        handler = topology.handler(lambda _, keys: topology.read_nova(keys))
        code = common.run(args, handler, out, err)
        return code, out.getvalue(), err.getvalue()

    def test_check_names_the_seeded_inconsistencies(self) -> None:
        self.assertEqual(
            (0, "topology: 9 hosts, levels block, rack: consistent\n", ""), self.command("check")
        )
        # A new host put in rack r1 but in block b2, and n6 also tagged into r4.
        self.tag_hosts("r1-b2", {"hpc:rack": "r1", "hpc:block": "b2"}, ["n9"])
        self.tag_hosts("r4-more", {"hpc:rack": "r4"}, ["n6"])
        code, out, err = self.command("check")
        self.assertEqual((1, ""), (code, err))
        self.assertEqual(
            [
                "rack n6: host has 2 values ['r3', 'r4'] (n6)",
                "rack r1: hosts sit in 2 blocks (block b1: n1, n2; block b2: n9) (n1, n2, n9)",
            ],
            out.splitlines(),
        )
        # show draws what the placement sees, and points at check.
        code, out, err = self.command("show")
        self.assertEqual(0, code, err)
        self.assertIn("warning: the tags do not form a tree (2 problem(s))", err)
        lines = out.splitlines()
        b2 = lines.index("block b2: 40 of 40 vCPUs free (5 hosts)")
        self.assertEqual(
            [
                "  rack r1: 8 of 8 vCPUs free (1 host)",
                "    host n9: 8 of 8 vCPUs free",
                "  rack r3: 16 of 16 vCPUs free (2 hosts)",
                "    host n5: 8 of 8 vCPUs free",
                "    host n6: 8 of 8 vCPUs free",
                "  rack r4: 16 of 16 vCPUs free (2 hosts)",
            ],
            lines[b2 + 1 : b2 + 7],
        )

    def test_show_prints_the_tree_with_free_cores_and_draws_it(self) -> None:
        flavor = self.hpc_flavor(vcpus=2)
        servers = self.launch(flavor, count=3)
        self.assertEqual({"ACTIVE"}, {s["status"] for s in servers})
        used = {host: 2 * count for host, count in self.hosts_of(servers).items()}
        path = os.path.join(self.dir, "topology.png")
        code, out, err = self.command("show", "--png", path)
        self.assertEqual((0, ""), (code, err))
        lines = out.splitlines()
        self.assertEqual("topology: 9 hosts, levels block, rack; 66 of 72 vCPUs free", lines[0])

        def free(*hosts: str) -> int:
            return sum(8 - used.get(host, 0) for host in hosts)

        expected = []
        for block, hosts in BLOCKS.items():
            expected.append(f"block {block}: {free(*hosts)} of 32 vCPUs free (4 hosts)")
            for rack, members in self.RACKS.items():
                if members[0] in hosts:
                    expected.append(f"  rack {rack}: {free(*members)} of 16 vCPUs free (2 hosts)")
                    expected += [f"    host {h}: {free(h)} of 8 vCPUs free" for h in members]
        expected += [
            f"block host:n9: {free('n9')} of 8 vCPUs free (1 host)",
            f"  rack host:n9: {free('n9')} of 8 vCPUs free (1 host)",
            f"    host n9: {free('n9')} of 8 vCPUs free",
            f"wrote {path}",
        ]
        self.assertEqual(expected, lines[1:])
        with open(path, "rb") as stream:
            self.assertEqual(PNG, stream.read(8))
        self.assertGreater(os.path.getsize(path), 1000)
        self.assertEqual(["nova.conf", "topology.png"], sorted(os.listdir(self.dir)))
