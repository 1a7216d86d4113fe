"""``topology show | check`` on data: the check, the tree, its text and its figure.

Nova's compute nodes and aggregates are handed to the command as a
:class:`~hpc_nova_scheduler.cmd.topology_tree.Cloud`, through its
injectable source; ``tests/functional/cmd/test_topology.py`` reads them
from the in-process Nova.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import types
from pathlib import Path

import fixtures
import testtools

from hpc_nova_scheduler.cmd import cli, common, topology, topology_view
from hpc_nova_scheduler.scheduler import aggregate_tags
from hpc_nova_scheduler.topology import tree as topology_tree

PNG = b"\x89PNG\r\n\x1a\n"
LEVELS = ("block", "rack")
BLOCKS = {"b1": ["n1", "n2", "n3", "n4"], "b2": ["n5", "n6", "n7", "n8"]}
RACKS = {"r1": ["n1", "n2"], "r2": ["n3", "n4"], "r3": ["n5", "n6"], "r4": ["n7", "n8"]}
#: Free vCPUs of the 8 of each host; n9 has no tag at all.
FREE = {"n1": 8, "n2": 6, "n3": 0, "n4": 8, "n5": 4, "n6": 8, "n7": 8, "n8": 2, "n9": 8}


def aggregates(**layouts: dict[str, list[str]]) -> list[types.SimpleNamespace]:
    """Nova-like aggregates: ``block={"b1": [hosts]}`` tags hpc:block=b1 on them."""
    return [
        types.SimpleNamespace(metadata={f"hpc:{level}": value}, hosts=list(hosts))
        for level, layout in layouts.items()
        for value, hosts in layout.items()
    ]


def cloud(blocks=BLOCKS, racks=RACKS, free=FREE, extra: list | None = None) -> topology_tree.Cloud:
    found = aggregates(block=blocks, rack=racks) + list(extra or [])
    return topology_tree.Cloud(
        {host: topology_tree.HostCores(8.0, float(cores)) for host, cores in free.items()},
        aggregate_tags.metadata_of(found, ("hpc:block", "hpc:rack")),
    )


class TestMetadataOf(testtools.TestCase):
    def test_any_keys_read_as_tags_of_reads_its_own(self) -> None:
        found = [
            types.SimpleNamespace(metadata={"hpc:block": " b1 ", "hpc:rack": "r1"}, hosts=["a"]),
            types.SimpleNamespace(metadata={"hpc:block": "b2", "hpc:pod": "p"}, hosts=["a", "b"]),
            types.SimpleNamespace(metadata={"hpc:block": "  "}, hosts=["c"]),
            types.SimpleNamespace(metadata=None, hosts=None),
        ]
        self.assertEqual(
            {
                "a": {"hpc:block": frozenset({"b1", "b2"})},
                "b": {"hpc:block": frozenset({"b2"})},
            },
            aggregate_tags.metadata_of(found, ["hpc:block"]),
        )
        # tags_of keeps its own keys: hpc:block is not among them.
        self.assertEqual({"a": {"hpc:rack": frozenset({"r1"})}}, aggregate_tags.tags_of(found))


class TestCheck(testtools.TestCase):
    def lines(self, found: topology_tree.Cloud, levels=LEVELS) -> list[str]:
        return topology_view.check_lines(found, levels, topology_tree.problems(found, levels))

    def test_a_tree_is_consistent(self) -> None:
        self.assertEqual(["topology: 9 hosts, levels block, rack: consistent"], self.lines(cloud()))
        self.assertEqual(
            ["topology: 9 hosts, level rack: consistent"], self.lines(cloud(), ("rack",))
        )

    def test_a_rack_in_two_blocks_and_a_host_in_two_racks_are_named(self) -> None:
        blocks = {"b1": ["n1", "n2", "n3"], "b2": ["n4", "n5", "n6", "n7", "n8"]}
        racks = dict(RACKS, r4=["n6", "n7", "n8"])
        self.assertEqual(
            [
                "rack n6: host has 2 values ['r3', 'r4'] (n6)",
                "rack r2: hosts sit in 2 blocks (block b1: n3; block b2: n4) (n3, n4)",
            ],
            self.lines(cloud(blocks, racks)),
        )

    def test_only_compute_hosts_count(self) -> None:
        # A name an aggregate still lists, with no compute node, splits nothing.
        stale = aggregates(block={"b2": ["gone"]}, rack={"r1": ["gone"]})
        self.assertEqual(
            ["topology: 9 hosts, levels block, rack: consistent"],
            self.lines(cloud(extra=stale)),
        )


class TestTree(testtools.TestCase):
    def test_the_tree_with_free_vcpus(self) -> None:
        root = topology_tree.tree(cloud(), LEVELS)
        self.assertEqual(
            [
                "topology: 9 hosts, levels block, rack; 52 of 72 vCPUs free",
                "block b1: 22 of 32 vCPUs free (4 hosts)",
                "  rack r1: 14 of 16 vCPUs free (2 hosts)",
                "    host n1: 8 of 8 vCPUs free",
                "    host n2: 6 of 8 vCPUs free",
                "  rack r2: 8 of 16 vCPUs free (2 hosts)",
                "    host n3: 0 of 8 vCPUs free",
                "    host n4: 8 of 8 vCPUs free",
                "block b2: 22 of 32 vCPUs free (4 hosts)",
                "  rack r3: 12 of 16 vCPUs free (2 hosts)",
                "    host n5: 4 of 8 vCPUs free",
                "    host n6: 8 of 8 vCPUs free",
                "  rack r4: 10 of 16 vCPUs free (2 hosts)",
                "    host n7: 8 of 8 vCPUs free",
                "    host n8: 2 of 8 vCPUs free",
                "block host:n9: 8 of 8 vCPUs free (1 host)",
                "  rack host:n9: 8 of 8 vCPUs free (1 host)",
                "    host n9: 8 of 8 vCPUs free",
            ],
            topology_view.text_lines(root, LEVELS),
        )

    def test_a_domain_is_its_path(self) -> None:
        # Two racks called r1, in two blocks: two domains, each in its block.
        racks = {"r1": ["n1", "n2", "n5", "n6"], "r2": ["n3", "n4"], "r4": ["n7", "n8"]}
        root = topology_tree.tree(cloud(racks=racks), LEVELS)
        self.assertEqual(
            [
                ("b1", "r1", 2, 14.0),
                ("b1", "r2", 2, 8.0),
                ("b2", "r1", 2, 12.0),
                ("b2", "r4", 2, 10.0),
                ("host:n9", "host:n9", 1, 8.0),
            ],
            [
                (block.name, rack.name, rack.hosts, rack.free)
                for block in root.children
                for rack in block.children
            ],
        )

    def test_a_host_with_two_values_is_drawn_under_the_first(self) -> None:
        racks = dict(RACKS, r4=["n6", "n7", "n8"])
        root = topology_tree.tree(cloud(racks=racks), LEVELS)
        (b2,) = [node for node in root.children if node.name == "b2"]
        self.assertEqual(
            {"r3": ["n5", "n6"], "r4": ["n7", "n8"]},
            {rack.name: [h.name for h in rack.children] for rack in b2.children},
        )
        self.assertEqual(9, root.hosts)

    def test_a_host_alone_at_one_level_only(self) -> None:
        # n9 has a rack but no block: a block of its own, holding its rack.
        found = cloud(racks=dict(RACKS, r9=["n9"]))
        lines = topology_view.text_lines(topology_tree.tree(found, LEVELS), LEVELS)
        self.assertEqual(
            [
                "block host:n9: 8 of 8 vCPUs free (1 host)",
                "  rack r9: 8 of 8 vCPUs free (1 host)",
                "    host n9: 8 of 8 vCPUs free",
            ],
            lines[-3:],
        )

    def test_an_empty_cloud(self) -> None:
        empty = topology_tree.Cloud({}, {})
        root = topology_tree.tree(empty, ("rack",))
        self.assertEqual(
            ["topology: 0 hosts, level rack; 0 of 0 vCPUs free"],
            topology_view.text_lines(root, ("rack",)),
        )


class TestFigure(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path

    def test_the_figure_is_a_png(self) -> None:
        path = os.path.join(self.dir, "topology.png")
        topology_view.draw(topology_tree.tree(cloud(), LEVELS), LEVELS, path)
        with open(path, "rb") as stream:
            self.assertEqual(PNG, stream.read(8))
        self.assertEqual(["topology.png"], os.listdir(self.dir))

    def test_a_large_and_an_empty_cloud_draw_too(self) -> None:
        many = {f"h{i:03}": i % 9 for i in range(300)}
        racks = {f"r{i}": [f"h{j:03}" for j in range(i * 30, i * 30 + 30)] for i in range(10)}
        blocks = {"b0": [f"h{j:03}" for j in range(150)]}
        for name, found in (
            ("large.png", cloud(blocks, racks, many)),
            ("empty.png", topology_tree.Cloud({}, {})),
        ):
            path = os.path.join(self.dir, name)
            topology_view.draw(topology_tree.tree(found, LEVELS), LEVELS, path)
            self.assertGreater(os.path.getsize(path), 0)

    def test_a_failed_write_leaves_nothing(self) -> None:
        path = os.path.join(self.dir, "topology.png")
        with open(path, "wb") as stream:
            stream.write(b"old")
        os.chmod(self.dir, 0o500)
        self.addCleanup(os.chmod, self.dir, 0o700)
        if os.access(self.dir, os.W_OK):
            # root writes anywhere: a folder that does not exist fails for it too.
            path = os.path.join(self.dir, "no", "topology.png")
        self.assertRaises(
            OSError, topology_view.draw, topology_tree.tree(cloud(), LEVELS), LEVELS, path
        )
        with open(os.path.join(self.dir, "topology.png"), "rb") as stream:
            self.assertEqual(b"old", stream.read())
        self.assertEqual(["topology.png"], os.listdir(self.dir))


class TestTopologyCommand(testtools.TestCase):
    """The command through the CLI's parser, with the cloud handed in."""

    def setUp(self) -> None:
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.conf_file = self.configure("block, rack")
        self.cloud = cloud()
        self.asked: list[tuple[str, ...]] = []

    def configure(self, levels: str) -> str:
        path = os.path.join(self.dir, "nova.conf")
        with open(path, "w", encoding="utf-8") as stream:
            stream.write(f"[hpc_scheduler]\ntopology_levels = {levels}\n")
        return path

    def source(self, args, keys) -> topology_tree.Cloud:
        self.asked.append(tuple(keys))
        return self.cloud

    def command(self, *argv: str) -> tuple[int, str, str]:
        args = cli.build_parser().parse_args(["--config-file", self.conf_file, "topology", *argv])
        out, err = io.StringIO(), io.StringIO()
        args.err = err
        code = common.run(args, topology.handler(self.source), out, err)
        return code, out.getvalue(), err.getvalue()

    def test_check_consistent_and_not(self) -> None:
        self.assertEqual(
            (0, "topology: 9 hosts, levels block, rack: consistent\n", ""), self.command("check")
        )
        self.assertEqual([("hpc:block", "hpc:rack")], self.asked)
        self.cloud = cloud(
            {"b1": ["n1", "n2", "n3"], "b2": ["n4", "n5", "n6", "n7", "n8"]},
            dict(RACKS, r4=["n6", "n7", "n8"]),
        )
        code, out, err = self.command("check")
        self.assertEqual((1, ""), (code, err))
        self.assertEqual(
            [
                "rack n6: host has 2 values ['r3', 'r4'] (n6)",
                "rack r2: hosts sit in 2 blocks (block b1: n3; block b2: n4) (n3, n4)",
            ],
            out.splitlines(),
        )

    def test_show_prints_the_tree_and_draws_it(self) -> None:
        path = os.path.join(self.dir, "tree.png")
        code, out, err = self.command("show", "--png", path)
        self.assertEqual((0, ""), (code, err))
        lines = out.splitlines()
        self.assertEqual("topology: 9 hosts, levels block, rack; 52 of 72 vCPUs free", lines[0])
        self.assertIn("  rack r2: 8 of 16 vCPUs free (2 hosts)", lines)
        self.assertEqual(f"wrote {path}", lines[-1])
        with open(path, "rb") as stream:
            self.assertEqual(PNG, stream.read(8))

    def test_show_warns_when_the_tags_are_no_tree(self) -> None:
        self.cloud = cloud(racks=dict(RACKS, r4=["n6", "n7", "n8"]))
        code, out, err = self.command("show")
        self.assertEqual(0, code, err)
        self.assertIn("    host n6: 8 of 8 vCPUs free", out)
        self.assertEqual(
            "hpc-nova-scheduler: warning: the tags do not form a tree (1 problem(s)); a host "
            "with two values at a level is shown under the first; see 'hpc-nova-scheduler "
            "topology check'\n",
            err,
        )

    def test_a_bad_level_is_one_line_naming_the_option(self) -> None:
        for levels, reason in (
            ("block,host", "topology level 'host' is reserved"),
            ("rack,rack", "topology level 'rack' is named twice"),
            ("Rack 1", "topology level 'rack 1' is not a name"),
            ("", "no topology level is named"),
            ("block,,rack", "topology level 2 of 3 is empty"),
        ):
            self.conf_file = self.configure(levels)
            for action in ("check", "show"):
                code, out, err = self.command(action)
                self.assertEqual((2, ""), (code, out), err)
                self.assertTrue(
                    err.startswith(
                        f"hpc-nova-scheduler: [hpc_scheduler] topology_levels: {reason}"
                    ),
                    err,
                )
                self.assertEqual(1, len(err.splitlines()), err)
        self.assertEqual([], self.asked)

    def test_the_option_left_out_is_seed_003s_rack(self) -> None:
        with open(self.conf_file, "w", encoding="utf-8") as stream:
            stream.write("[hpc_scheduler]\n")
        code, out, _ = self.command("check")
        self.assertEqual((0, "topology: 9 hosts, level rack: consistent\n"), (code, out))
        self.assertEqual([("hpc:rack",)], self.asked)

    def test_a_png_that_cannot_be_written_leaves_nothing(self) -> None:
        path = os.path.join(self.dir, "no", "such", "tree.png")
        code, out, err = self.command("show", "--png", path)
        self.assertEqual((1, ""), (code, out))
        self.assertEqual(f"hpc-nova-scheduler: --png {path}: No such file or directory\n", err)
        self.assertEqual(["nova.conf"], os.listdir(self.dir))

    def test_help(self) -> None:
        for command in (["topology"], ["topology", "show"], ["topology", "check"]):
            stdout = self.useFixture(fixtures.StringStream("stdout"))
            self.useFixture(fixtures.MonkeyPatch("sys.stdout", stdout.stream))
            error = self.assertRaises(SystemExit, cli.main, [*command, "--help"])
            self.assertEqual(0, error.code, command)
            text = stdout.getDetails()["stdout"].as_text()
            self.assertIn("usage: hpc-nova-scheduler topology", text)
        code, _, err = self.command_without_action()
        self.assertEqual(2, code)
        self.assertIn("ACTION", err)

    def command_without_action(self) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        code = cli.main(["--config-file", self.conf_file, "topology"], out=out, err=err)
        return code, out.getvalue(), err.getvalue()


class TestTopologyWithoutNova(testtools.TestCase):
    def test_a_missing_nova_configuration_is_one_line(self) -> None:
        folder = self.useFixture(fixtures.TempDir()).path
        conf = os.path.join(folder, "nova.conf")
        with open(conf, "w", encoding="utf-8") as stream:
            stream.write("[hpc_scheduler]\ntopology_levels = block,rack\n")
        command = Path(sys.executable).parent / "hpc-nova-scheduler"
        for action in (["check"], ["show", "--png", os.path.join(folder, "tree.png")]):
            done = subprocess.run(
                [str(command), "--config-file", conf, "topology", *action],
                capture_output=True,
                text=True,
                cwd=folder,
                timeout=120,
            )
            self.assertEqual((1, ""), (done.returncode, done.stdout), done.stderr)
            self.assertEqual(
                "hpc-nova-scheduler: cannot read Nova's compute nodes and aggregates: No "
                "sql_connection parameter is established; pass nova-scheduler's nova.conf with "
                "--config-file\n",
                done.stderr,
            )
        self.assertEqual(["nova.conf"], os.listdir(folder))
