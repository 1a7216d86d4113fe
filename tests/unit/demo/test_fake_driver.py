"""The multi-node fake driver's layout file and node UUIDs."""

from __future__ import annotations

import json
import os

import fixtures
import testtools

from hpc_nova_scheduler.demo import fake_driver
from hpc_nova_scheduler.demo.fake_driver import Shape


class TestLoadNodes(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.directory = self.useFixture(fixtures.TempDir()).path

    def write(self, text: str, name: str = "nodes.json") -> str:
        path = os.path.join(self.directory, name)
        with open(path, "w", encoding="utf-8") as stream:
            stream.write(text)
        return path

    def assert_refused(self, path: str, *words: str) -> str:
        error = self.assertRaises(ValueError, fake_driver.load_nodes, path)
        message = str(error)
        # One line, naming the file first.
        self.assertEqual(1, len(message.splitlines()), message)
        self.assertTrue(message.startswith(f"{path}: "), message)
        for word in words:
            self.assertIn(word, message)
        return message

    def test_a_layout_is_read_with_defaults_for_what_a_node_leaves_out(self) -> None:
        layout = {
            "c1": {"c1-a": {"vcpus": 8, "cpu_model": "EPYC"}, "c1-b": {}},
            "c2": {"c2-a": {"memory_mb": 4096, "local_gb": 20}},
        }
        found = fake_driver.load_nodes(self.write(json.dumps(layout)))
        self.assertEqual(
            {
                "c1": {"c1-a": Shape(vcpus=8, cpu_model="EPYC"), "c1-b": Shape()},
                "c2": {"c2-a": Shape(memory_mb=4096, local_gb=20)},
            },
            found,
        )
        # The nodes keep the file's order: the driver reports them so.
        self.assertEqual(["c1-a", "c1-b"], list(found["c1"]))

    def test_a_missing_file(self) -> None:
        self.assert_refused(os.path.join(self.directory, "absent.json"), "No such file")

    def test_a_directory(self) -> None:
        self.assert_refused(self.directory)

    def test_bad_json(self) -> None:
        self.assert_refused(self.write('{"c1": {"c1-a": {}'))

    def test_not_an_object_of_hosts(self) -> None:
        self.assert_refused(self.write('["c1"]'), "object of hosts")

    def test_unknown_field_names_the_node_host_and_field(self) -> None:
        path = self.write(json.dumps({"c1": {"c1-a": {"vcpus": 4, "cores": 8}}}))
        self.assert_refused(path, "'c1-a'", "'c1'", "cores")

    def test_a_node_that_is_not_an_object(self) -> None:
        self.assert_refused(self.write(json.dumps({"c1": {"c1-a": 4}})), "'c1-a'", "'c1'")

    def test_a_host_without_nodes(self) -> None:
        self.assert_refused(self.write(json.dumps({"c1": {}})), "host 'c1'")

    def test_a_host_whose_nodes_are_not_an_object(self) -> None:
        self.assert_refused(self.write(json.dumps({"c1": ["c1-a"]})), "host 'c1'")
        self.assert_refused(self.write(json.dumps({"c1": None})), "host 'c1'")

    def test_an_empty_host_or_node_name(self) -> None:
        self.assert_refused(self.write(json.dumps({" ": {"a": {}}})), "empty name")
        self.assert_refused(self.write(json.dumps({"c1": {"": {}}})), "host 'c1'", "empty name")

    def test_fields_of_the_wrong_type_or_size(self) -> None:
        for field, value in (
            ("vcpus", "8"),
            ("vcpus", 0),
            ("memory_mb", -1),
            ("local_gb", 1.5),
            ("vcpus", True),
            ("cpu_model", ""),
            ("cpu_model", 7),
        ):
            path = self.write(json.dumps({"c1": {"c1-a": {field: value}}}))
            self.assert_refused(path, "'c1-a'", "'c1'", field)


class TestNodeUuid(testtools.TestCase):
    def test_the_same_node_has_the_same_uuid_every_time(self) -> None:
        # A fixed value, not one drawn per process: a restarted compute
        # must find its providers again.
        self.assertEqual(
            "4b69c6eb-5d0a-599c-83a8-8943cd18dfca", fake_driver.node_uuid("c1", "c1-a")
        )

    def test_nodes_and_hosts_are_told_apart(self) -> None:
        uuids = {
            fake_driver.node_uuid("c1", "a"),
            fake_driver.node_uuid("c1", "b"),
            fake_driver.node_uuid("c2", "a"),
            # A node named as another service's host is still its own.
            fake_driver.node_uuid("c1", "c2"),
            fake_driver.node_uuid("c2", "c2"),
        }
        self.assertEqual(5, len(uuids))
