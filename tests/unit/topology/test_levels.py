"""Topology levels, the tenant's topology specs and the hierarchy check."""

from __future__ import annotations

import os

import fixtures
import testtools
from hypothesis import assume, given
from hypothesis import strategies as st
from oslo_config import cfg

from hpc_nova_scheduler import conf
from hpc_nova_scheduler.core.profile import ProfileError
from hpc_nova_scheduler.topology import levels as topology
from hpc_nova_scheduler.topology.levels import (
    SPEC_PREFERRED,
    SPEC_REQUIRED,
    SPEC_SEGMENT,
    SPEC_SEGMENT_LEVEL,
    TopologyError,
    TopologySpec,
    inconsistencies,
    parse_levels,
    spec_from_extra_specs,
)

#: Level names the parser accepts.
level_names = st.from_regex(r"[a-z][a-z0-9_-]{0,12}", fullmatch=True).filter(
    lambda name: name not in topology.RESERVED_LEVELS
)
level_lists = st.lists(level_names, min_size=1, max_size=5, unique=True)

BLOCK_RACK = ("block", "rack")


class TestParseLevels(testtools.TestCase):
    def test_no_option_is_seed_003s_rack(self) -> None:
        self.assertEqual(("rack",), parse_levels(None))

    def test_an_empty_list_is_refused(self) -> None:
        for value in ("", " , ", [], ["", " "]):
            error = self.assertRaises(TopologyError, parse_levels, value)
            self.assertIn("no topology level is named", str(error))

    def test_an_empty_name_is_refused(self) -> None:
        for value, where in (
            ("block,,rack", "level 2 of 3 is empty"),
            ("rack,", "level 2 of 2 is empty"),
            (" ,rack", "level 1 of 2 is empty"),
            (["block", " ", "rack"], "level 2 of 3 is empty"),
        ):
            error = self.assertRaises(TopologyError, parse_levels, value)
            self.assertIn(where, str(error))

    def test_names_are_trimmed_and_lower_cased_in_order(self) -> None:
        self.assertEqual(("pod", "block", "rack"), parse_levels(" Pod, BLOCK ,rack"))
        self.assertEqual(("block", "rack"), parse_levels(["block", " Rack "]))

    def test_bad_lists_name_the_level(self) -> None:
        for value, reason in (
            ("block,host", "'host' is reserved (the host is always the innermost level)"),
            ("cpu_group", "'cpu_group' is reserved"),
            ("platform,rack", "'platform' is reserved"),
            ("app_class", "'app_class' is reserved"),
            ("rack,block,rack", "'rack' is named twice"),
            ("Rack,rack", "'rack' is named twice"),
            ("2rack", "'2rack' is not a name"),
            ("my rack", "'my rack' is not a name"),
            ("rack.a", "'rack.a' is not a name"),
            ("r" * 64, "is not a name"),
        ):
            error = self.assertRaises(TopologyError, parse_levels, value)
            self.assertIn(reason, str(error))

    def test_the_longest_name_is_accepted(self) -> None:
        self.assertEqual(("r" * 63,), parse_levels("r" * 63))

    @given(level_lists)
    def test_any_valid_list_round_trips(self, levels: list[str]) -> None:
        self.assertEqual(tuple(levels), parse_levels(levels))
        self.assertEqual(tuple(levels), parse_levels(",".join(levels)))
        self.assertEqual(tuple(levels), parse_levels(" , ".join(f" {x.upper()} " for x in levels)))
        # What the parser returns, it accepts again unchanged.
        self.assertEqual(tuple(levels), parse_levels(parse_levels(levels)))

    @given(level_lists, st.sampled_from(sorted(topology.RESERVED_LEVELS)), st.integers(0, 5))
    def test_a_reserved_name_anywhere_is_refused(
        self, levels: list[str], reserved: str, at: int
    ) -> None:
        levels.insert(min(at, len(levels)), reserved)
        error = self.assertRaises(TopologyError, parse_levels, levels)
        self.assertIn(f"{reserved!r} is reserved", str(error))

    @given(level_lists, st.data())
    def test_a_repeated_name_is_refused(self, levels: list[str], data: st.DataObject) -> None:
        repeated = data.draw(st.sampled_from(levels))
        error = self.assertRaises(TopologyError, parse_levels, [*levels, repeated.upper()])
        self.assertIn(f"{repeated!r} is named twice", str(error))


class TestConfigured(testtools.TestCase):
    """The one reader of ``[hpc_scheduler] topology_levels``."""

    def config(self, text: str | None) -> cfg.ConfigOpts:
        options = cfg.ConfigOpts()
        conf.register_opts(options)
        folder = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(folder, "nova.conf")
        with open(path, "w", encoding="utf-8") as stream:
            stream.write("[hpc_scheduler]\n")
            if text is not None:
                stream.write(f"topology_levels = {text}\n")
        options([], default_config_files=[path])
        return options

    def test_the_option_left_out_is_seed_003s_rack(self) -> None:
        self.assertEqual(("rack",), topology.configured(self.config(None)))

    def test_the_levels_are_read(self) -> None:
        self.assertEqual(("block", "rack"), topology.configured(self.config("Block, rack")))

    def test_an_empty_value_is_one_line_naming_the_option(self) -> None:
        error = self.assertRaises(topology.LevelsOptionError, topology.configured, self.config(""))
        self.assertEqual(
            "[hpc_scheduler] topology_levels: no topology level is named; name at least one "
            "(the default is rack)",
            str(error),
        )

    def test_an_empty_element_is_one_line_naming_the_option(self) -> None:
        error = self.assertRaises(
            topology.LevelsOptionError, topology.configured, self.config("block,,rack")
        )
        self.assertTrue(str(error).startswith("[hpc_scheduler] topology_levels: "), error)
        self.assertIn("topology level 2 of 3 is empty", str(error))
        self.assertNotIn("\n", str(error))


class TestValidateSpec(testtools.TestCase):
    def test_levels_of_the_cloud_and_host_are_accepted(self) -> None:
        for name in (SPEC_REQUIRED, SPEC_PREFERRED, SPEC_SEGMENT_LEVEL):
            for value in ("block", "rack", "host", " Rack ", "HOST"):
                topology.validate_spec(name, value, BLOCK_RACK)

    def test_unknown_or_empty_levels_name_the_key(self) -> None:
        for name in (SPEC_REQUIRED, SPEC_PREFERRED, SPEC_SEGMENT_LEVEL):
            error = self.assertRaises(ProfileError, topology.validate_spec, name, "pod", BLOCK_RACK)
            self.assertEqual(name, error.key)
            self.assertIn("unknown topology level 'pod'", error.reason)
            self.assertIn("this cloud's levels are block, rack, host", error.reason)
            for value in ("", "  ", None, 3):
                error = self.assertRaises(
                    ProfileError, topology.validate_spec, name, value, BLOCK_RACK
                )
                self.assertEqual(name, error.key)
                self.assertIn("expected a topology level", error.reason)

    def test_default_levels_know_no_block(self) -> None:
        error = self.assertRaises(
            ProfileError, topology.validate_spec, SPEC_REQUIRED, "block", ("rack",)
        )
        self.assertIn("this cloud's levels are rack, host", error.reason)

    def test_segment_sizes(self) -> None:
        for value, size in (("1", 1), (" 4 ", 4), (16, 16), (8.0, 8), ("100000", 100_000)):
            self.assertEqual(size, topology.parse_segment(value))
            topology.validate_spec(SPEC_SEGMENT, value, BLOCK_RACK)
        for value, reason in (
            ("0", "below 1"),
            (0, "below 1"),
            ("-2", "below 1"),
            ("x", "not a whole number"),
            ("", "not a whole number"),
            ("1.5", "not a whole number"),
            ("4.0", "not a whole number"),
            (2.5, "not a whole number"),
            (None, "not a whole number"),
            (True, "expected a whole number"),
            ("100001", "above 100000"),
        ):
            error = self.assertRaises(
                ProfileError, topology.validate_spec, SPEC_SEGMENT, value, BLOCK_RACK
            )
            self.assertEqual(SPEC_SEGMENT, error.key)
            self.assertIn(reason, error.reason)

    @given(st.integers(min_value=1, max_value=topology.MAX_SEGMENT))
    def test_any_whole_number_in_range_is_a_segment(self, size: int) -> None:
        self.assertEqual(size, topology.parse_segment(str(size)))

    @given(st.integers(max_value=0))
    def test_no_segment_below_one(self, size: int) -> None:
        error = self.assertRaises(ProfileError, topology.parse_segment, str(size))
        self.assertIn("below 1", error.reason)


class TestSpecFromExtraSpecs(testtools.TestCase):
    def test_no_topology_specs_is_the_empty_spec(self) -> None:
        for specs in (None, {}, {"hpc:app_class": "SyncHPC"}):
            spec = spec_from_extra_specs(specs, BLOCK_RACK)
            self.assertEqual(TopologySpec(), spec)
            self.assertTrue(spec.empty)
            self.assertEqual("none", spec.describe())

    def test_all_four_keys(self) -> None:
        specs = {
            SPEC_REQUIRED: "Block",
            SPEC_PREFERRED: "rack",
            SPEC_SEGMENT: "4",
            SPEC_SEGMENT_LEVEL: "RACK",
        }
        spec = spec_from_extra_specs(specs, BLOCK_RACK)
        self.assertEqual(TopologySpec("block", "rack", 4, "rack"), spec)
        self.assertFalse(spec.empty)
        self.assertEqual("required block, preferred rack, segments of 4 per rack", spec.describe())

    def test_each_key_alone_or_in_pairs(self) -> None:
        for specs, expected in (
            ({SPEC_REQUIRED: "rack"}, TopologySpec(required="rack")),
            ({SPEC_PREFERRED: "block"}, TopologySpec(preferred="block")),
            ({SPEC_PREFERRED: "host"}, TopologySpec(preferred="host")),
            ({SPEC_SEGMENT: "2", SPEC_SEGMENT_LEVEL: "host"}, TopologySpec(None, None, 2, "host")),
            (
                {SPEC_REQUIRED: "block", SPEC_PREFERRED: "host"},
                TopologySpec("block", "host"),
            ),
            # A segment level inside, or at, the required level.
            (
                {SPEC_REQUIRED: "rack", SPEC_SEGMENT: "2", SPEC_SEGMENT_LEVEL: "rack"},
                TopologySpec("rack", None, 2, "rack"),
            ),
            (
                {SPEC_REQUIRED: "block", SPEC_SEGMENT: "3", SPEC_SEGMENT_LEVEL: "rack"},
                TopologySpec("block", None, 3, "rack"),
            ),
            # The preferred level and the segment level are not compared.
            (
                {SPEC_PREFERRED: "host", SPEC_SEGMENT: "8", SPEC_SEGMENT_LEVEL: "block"},
                TopologySpec(None, "host", 8, "block"),
            ),
        ):
            self.assertEqual(expected, spec_from_extra_specs(specs, BLOCK_RACK))

    def test_contradictions_name_the_key(self) -> None:
        for specs, key, reason in (
            ({SPEC_SEGMENT: "4"}, SPEC_SEGMENT, f"needs {SPEC_SEGMENT_LEVEL}"),
            ({SPEC_SEGMENT_LEVEL: "rack"}, SPEC_SEGMENT_LEVEL, f"needs {SPEC_SEGMENT}"),
            (
                {SPEC_REQUIRED: "rack", SPEC_PREFERRED: "rack"},
                SPEC_PREFERRED,
                "level 'rack' is not inside the required level 'rack'",
            ),
            (
                {SPEC_REQUIRED: "rack", SPEC_PREFERRED: "block"},
                SPEC_PREFERRED,
                "not inside the required level",
            ),
            (
                {SPEC_REQUIRED: "host", SPEC_PREFERRED: "rack"},
                SPEC_PREFERRED,
                "not inside the required level",
            ),
            (
                {SPEC_REQUIRED: "rack", SPEC_SEGMENT: "2", SPEC_SEGMENT_LEVEL: "block"},
                SPEC_SEGMENT_LEVEL,
                "level 'block' is outside the required level 'rack'",
            ),
            ({SPEC_REQUIRED: "pod"}, SPEC_REQUIRED, "unknown topology level"),
            ({SPEC_SEGMENT: "0", SPEC_SEGMENT_LEVEL: "rack"}, SPEC_SEGMENT, "below 1"),
            # A bad value is reported before a missing partner.
            ({SPEC_SEGMENT: "x"}, SPEC_SEGMENT, "not a whole number"),
            ({SPEC_SEGMENT_LEVEL: "pod"}, SPEC_SEGMENT_LEVEL, "unknown topology level"),
        ):
            error = self.assertRaises(ProfileError, spec_from_extra_specs, specs, BLOCK_RACK)
            self.assertEqual(key, error.key, specs)
            self.assertIn(reason, error.reason)

    def test_check_count(self) -> None:
        spec = TopologySpec(segment=4, segment_level="rack")
        for count in (4, 8, 400):
            spec.check_count(count)
        error = self.assertRaises(ProfileError, spec.check_count, 6)
        self.assertEqual(SPEC_SEGMENT, error.key)
        self.assertIn("segments of 4 VMs do not divide a request of 6 VMs", error.reason)
        for count in (1, 7, 13):
            TopologySpec(required="rack").check_count(count)

    @given(st.integers(1, 64), st.integers(1, 1000))
    def test_count_is_checked_by_division(self, segment: int, count: int) -> None:
        spec = TopologySpec(segment=segment, segment_level="host")
        if count % segment:
            self.assertRaises(ProfileError, spec.check_count, count)
        else:
            spec.check_count(count)

    def test_depth(self) -> None:
        self.assertEqual(
            [0, 1, 2], [topology.depth(x, BLOCK_RACK) for x in ("block", "rack", "host")]
        )

    @given(level_lists, st.data())
    def test_preferred_must_lie_inside_required(
        self, levels: list[str], data: st.DataObject
    ) -> None:
        known = [*levels, topology.HOST_LEVEL]
        required = data.draw(st.sampled_from(known))
        preferred = data.draw(st.sampled_from(known))
        specs = {SPEC_REQUIRED: required, SPEC_PREFERRED: preferred}
        if known.index(preferred) > known.index(required):
            self.assertEqual(
                TopologySpec(required, preferred), spec_from_extra_specs(specs, levels)
            )
        else:
            error = self.assertRaises(ProfileError, spec_from_extra_specs, specs, levels)
            self.assertEqual(SPEC_PREFERRED, error.key)

    @given(level_lists, st.data(), st.integers(1, 64))
    def test_segment_level_must_not_lie_outside_required(
        self, levels: list[str], data: st.DataObject, size: int
    ) -> None:
        known = [*levels, topology.HOST_LEVEL]
        required = data.draw(st.sampled_from(known))
        level = data.draw(st.sampled_from(known))
        specs = {SPEC_REQUIRED: required, SPEC_SEGMENT: str(size), SPEC_SEGMENT_LEVEL: level}
        if known.index(level) >= known.index(required):
            self.assertEqual(
                TopologySpec(required, None, size, level), spec_from_extra_specs(specs, levels)
            )
        else:
            error = self.assertRaises(ProfileError, spec_from_extra_specs, specs, levels)
            self.assertEqual(SPEC_SEGMENT_LEVEL, error.key)


def tags(**hosts: dict[str, str]) -> dict[str, dict[str, set[str]]]:
    """Each host's single value per level, in the shape :func:`inconsistencies` reads."""
    return {
        host: {level: {value} for level, value in values.items()} for host, values in hosts.items()
    }


class TestInconsistencies(testtools.TestCase):
    def test_a_tree_is_consistent(self) -> None:
        hosts = tags(
            n1={"block": "b1", "rack": "r1"},
            n2={"block": "b1", "rack": "r1"},
            n3={"block": "b1", "rack": "r2"},
            n4={"block": "b2", "rack": "r3"},
            n5={"block": "b2"},
            n6={},
        )
        self.assertEqual([], inconsistencies(hosts, BLOCK_RACK))

    def test_a_host_with_two_racks(self) -> None:
        hosts = {"n1": {"rack": {"r1", "r2"}}, "n2": {"rack": {"r1"}}}
        found = inconsistencies(hosts, ("rack",))
        self.assertEqual(1, len(found))
        self.assertEqual(("rack", "n1", ("n1",)), (found[0].level, found[0].domain, found[0].hosts))
        self.assertEqual("rack n1: host has 2 values ['r1', 'r2'] (n1)", str(found[0]))

    def test_a_rack_whose_hosts_sit_in_two_blocks(self) -> None:
        hosts = tags(
            n1={"block": "b1", "rack": "r1"},
            n2={"block": "b2", "rack": "r1"},
            n3={"block": "b1", "rack": "r1"},
            n4={"block": "b2", "rack": "r2"},
        )
        found = inconsistencies(hosts, BLOCK_RACK)
        self.assertEqual(1, len(found))
        self.assertEqual("rack", found[0].level)
        self.assertEqual("r1", found[0].domain)
        self.assertEqual(("n1", "n2", "n3"), found[0].hosts)
        self.assertEqual(
            "rack r1: hosts sit in 2 blocks (block b1: n1, n3; block b2: n2) (n1, n2, n3)",
            str(found[0]),
        )

    def test_a_rack_with_a_host_outside_every_block(self) -> None:
        # A host without a block is a block of its own: its rack is split.
        hosts = tags(n1={"block": "b1", "rack": "r1"}, n2={"rack": "r1"})
        found = inconsistencies(hosts, BLOCK_RACK)
        self.assertEqual(["r1"], [f.domain for f in found])
        self.assertIn("block host:n2: n2", found[0].detail)

    def test_both_faults_at_three_levels(self) -> None:
        hosts = {
            "n1": {"pod": {"p1"}, "block": {"b1"}, "rack": {"r1"}},
            "n2": {"pod": {"p2"}, "block": {"b1"}, "rack": {"r1"}},
            "n3": {"pod": {"p1"}, "block": {"b2", "b3"}, "rack": {"r2"}},
        }
        found = {(f.level, f.domain): f.hosts for f in inconsistencies(hosts, ("pod", *BLOCK_RACK))}
        self.assertEqual(
            {("block", "n3"): ("n3",), ("block", "b1"): ("n1", "n2")},
            found,
        )

    @given(level_lists, st.data())
    def test_any_tree_is_consistent(self, levels: list[str], data: st.DataObject) -> None:
        self.assertEqual([], inconsistencies(self.tree(levels, data), levels))

    @given(st.lists(level_names, min_size=2, max_size=4, unique=True), st.data())
    def test_moving_a_host_to_another_parent_is_reported(
        self, levels: list[str], data: st.DataObject
    ) -> None:
        hosts = self.tree(levels, data, full=True)
        inner = data.draw(st.integers(1, len(levels) - 1))
        outer = inner - 1
        shared = [
            (host, mate)
            for host in hosts
            for mate in hosts
            if host != mate and hosts[host][levels[inner]] == hosts[mate][levels[inner]]
        ]
        assume(shared)
        moved, mate = data.draw(st.sampled_from(shared))
        domain = next(iter(hosts[moved][levels[inner]]))
        hosts[moved][levels[outer]] = {next(iter(hosts[moved][levels[outer]])) + "-moved"}
        reported = [
            f
            for f in inconsistencies(hosts, levels)
            if (f.level, f.domain) == (levels[inner], domain)
        ]
        self.assertEqual(1, len(reported))
        self.assertIn(moved, reported[0].hosts)
        self.assertIn(mate, reported[0].hosts)
        self.assertIn(moved, str(reported[0]))

    @staticmethod
    def tree(
        levels: list[str], data: st.DataObject, full: bool = False
    ) -> dict[str, dict[str, set[str]]]:
        """Hosts tagged as a tree: a domain's name spells its path from the top.

        Unless ``full``, a host may lack the values of its innermost levels
        (a host outside every rack); missing outer values would make it a
        domain of its own, so they are never left out above a value.
        """
        count = data.draw(st.integers(1, 12), label="hosts")
        hosts: dict[str, dict[str, set[str]]] = {}
        for index in range(count):
            path = data.draw(
                st.lists(st.integers(0, 2), min_size=len(levels), max_size=len(levels)),
                label="path",
            )
            tagged = len(levels) if full else data.draw(st.integers(0, len(levels)), label="depth")
            hosts[f"n{index}"] = {
                level: {level + "-" + ".".join(map(str, path[: depth + 1]))}
                for depth, level in enumerate(levels[:tagged])
            }
        return hosts
