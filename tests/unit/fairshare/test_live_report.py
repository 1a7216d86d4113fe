"""Fair share in the live cloud now, without Nova or a database: what show and report print."""

from __future__ import annotations

import datetime

import testtools
from hypothesis import given
from hypothesis import strategies as st

from hpc_nova_scheduler.core.sharing import Platform
from hpc_nova_scheduler.db import api as db_api
from hpc_nova_scheduler.db import loans as loans_db
from hpc_nova_scheduler.fairshare import live_report
from hpc_nova_scheduler.fairshare.combinations import CombinationTable
from hpc_nova_scheduler.fairshare.entitlements import ProjectView

WRITTEN = datetime.datetime(2026, 11, 1, 12, 0, 0)
PLATFORMS = (Platform("amd", 2, 16), Platform("intel", 2, 16))
HOSTS = {"a1": "amd", "a2": "amd", "i1": "intel", "i2": "intel"}
#: A runs twice as fast on amd, B twice as fast on intel.
TABLE = CombinationTable(
    {("A", "amd"): 10.0, ("A", "intel"): 20.0, ("B", "amd"): 30.0, ("B", "intel"): 15.0}
)
GENERATION = db_api.Generation(
    1,
    WRITTEN,
    "pa-rr",
    {"pa": {"amd": 16}, "pb": {"intel": 16}},
    {"affinity": {"pa": {"amd": 1.2, "intel": 0.8}}},
)


def view(
    use: dict[str, dict[str, int]],
    shares: dict[str, float] | None = None,
    declared: int = 16,
    age_s: float = 30.0,
    loans: tuple[loans_db.LoanRecord, ...] = (),
) -> live_report.Live:
    """Projects pa (application A) and pb (B), each asking for ``declared``
    cores; any other project with a share asks for none."""
    shares = shares if shares is not None else {"pa": 1.0, "pb": 1.0}
    applications = {"pa": "A", "pb": "B"}
    projects = [
        ProjectView(
            name,
            weight,
            declared=declared if name in applications else 0,
            application=applications.get(name),
        )
        for name, weight in shares.items()
    ]
    return live_report.live_view(
        GENERATION,
        PLATFORMS,
        HOSTS,
        projects,
        TABLE,
        policy="pa-rr",
        interval=60,
        now=WRITTEN + datetime.timedelta(seconds=age_s),
        shares=shares,
        use=use,
        usage={("pa", "intel"): 7200.0},
        loans=loans,
    )


class TestLiveView(testtools.TestCase):
    def test_cores_in_use_per_platform_and_on_unknown_hosts(self) -> None:
        in_use, elsewhere = live_report.cores_by_platform(
            {"pa": {"i1": 4, "i2": 2, "new1": 8}, "pb": {"a1": 1}, "noshare": {"a1": 16}},
            {"pa": 1.0, "pb": 1.0},
            HOSTS,
        )
        self.assertEqual({"pa": {"intel": 6}, "pb": {"amd": 1}}, in_use)
        self.assertEqual({"pa": 8}, elsewhere)

    def test_relative_speed_and_best_equivalent_cores(self) -> None:
        found = view({"pa": {"i1": 4, "a1": 2}})
        self.assertEqual(("amd", "intel"), found.platforms)
        self.assertEqual(1.0, found.speed("pa", "amd"))
        self.assertEqual(0.5, found.speed("pa", "intel"))
        # 4 cores at half speed and 2 at full speed.
        self.assertEqual(4.0, found.best_equivalent("pa"))
        self.assertEqual(0.0, found.best_equivalent("pb"))

    def test_an_unmeasured_platform_has_no_speed_and_counts_its_cores_whole(self) -> None:
        found = view({"pa": {"i1": 4}})
        found = live_report.Live(**{**vars(found), "solo": {"pa": {"amd": 10.0}}})
        self.assertIsNone(found.speed("pa", "intel"))
        self.assertEqual(4.0, found.best_equivalent("pa"))

    def test_stale_after_two_intervals_and_the_age_never_negative(self) -> None:
        self.assertFalse(view({}, age_s=120).stale)
        self.assertTrue(view({}, age_s=121).stale)
        self.assertEqual(0.0, view({}, age_s=-5).age_s)

    def test_project_shares_as_sshare_shows_them(self) -> None:
        found = view({"pa": {"i1": 4}})
        shown = live_report.project_shares(found, ["pa"])
        self.assertEqual(["pa"], list(shown))
        pa = shown["pa"]
        self.assertEqual((1.0, "A", 16), (pa["weight"], pa["application"], pa["demand"]))
        self.assertEqual(
            {
                "entitled": 0,
                "in_use": 4,
                "usage_core_seconds": 7200.0,
                "affinity": 0.8,
                "relative_throughput": 0.5,
                "borrowed": 0,
                "preemptible": 0,
            },
            pa["platforms"]["intel"],
        )
        self.assertEqual(16, pa["platforms"]["amd"]["entitled"])
        self.assertIsNone(
            live_report.project_shares(found, ["pb"])["pb"]["platforms"]["amd"]["affinity"]
        )

    def test_borrowed_and_preemptible_cores_per_platform(self) -> None:
        def loan(uuid, kind, cores, host, stopped=False):
            return loans_db.LoanRecord(
                uuid, "pa", HOSTS[host], cores, kind, WRITTEN, cores, stopped, host, host
            )

        # pa borrowed 4 cores on intel (in use), runs 2 preemptible ones
        # there (not in use), and a reclaim stopped 8 more (counted nowhere).
        found = view(
            {"pa": {"i1": 4}},
            loans=(
                loan("b1", db_api.BORROWED, 4, "i1"),
                loan("p1", db_api.PREEMPTIBLE, 2, "i2"),
                loan("b2", db_api.BORROWED, 8, "i2", stopped=True),
            ),
        )
        intel = live_report.project_shares(found, ["pa"])["pa"]["platforms"]["intel"]
        self.assertEqual((4, 4, 2), (intel["in_use"], intel["borrowed"], intel["preemptible"]))
        # What show counts against nothing does not change the fairness report either.
        self.assertEqual(4, live_report.fairness_of(found).projects["pa"]["cores_in_use"])


class TestFairnessOf(testtools.TestCase):
    def test_jain_and_efficiency(self) -> None:
        # pa: 4 cores at half speed = 2 best-equivalent; pb: 4 at full speed.
        result = live_report.fairness_of(view({"pa": {"i1": 4}, "pb": {"i2": 4}}))
        self.assertEqual(
            {
                "weight": 1.0,
                "demand": 16,
                "cores_in_use": 4,
                "best_equivalent_cores": 2.0,
                "normalised_throughput_share": 2.0,
            },
            result.projects["pa"],
        )
        self.assertEqual(("pa", "pb"), result.counted)
        self.assertAlmostEqual(36 / 40, result.jain)
        self.assertAlmostEqual(6 / 8, result.efficiency)

    def test_shares_divide_by_weight_and_only_projects_asking_for_cores_count(self) -> None:
        found = view({"pa": {"i1": 4}, "pb": {"i2": 4}}, shares={"pa": 1.0, "pb": 2.0, "idle": 5})
        result = live_report.fairness_of(found)
        self.assertEqual(2.0, result.projects["pb"]["normalised_throughput_share"])
        self.assertEqual(0.0, result.projects["idle"]["normalised_throughput_share"])
        self.assertEqual(("pa", "pb"), result.counted)
        self.assertAlmostEqual(1.0, result.jain)

    def test_nothing_in_use_has_neither_index(self) -> None:
        result = live_report.fairness_of(view({}, declared=0))
        self.assertEqual(((), None, None), (result.counted, result.jain, result.efficiency))

    @given(
        st.dictionaries(
            st.sampled_from(["pa", "pb"]),
            st.dictionaries(st.sampled_from(sorted(HOSTS)), st.integers(1, 64), min_size=1),
            min_size=1,
        ),
        st.dictionaries(
            st.sampled_from(["pa", "pb"]), st.floats(0.1, 10.0), min_size=2, max_size=2
        ),
    )
    def test_jain_and_efficiency_stay_in_their_ranges(self, use, shares) -> None:
        result = live_report.fairness_of(view(use, shares=shares))
        self.assertIsNotNone(result.jain)
        self.assertGreaterEqual(result.jain, 1 / len(result.counted) - 1e-9)
        self.assertLessEqual(result.jain, 1 + 1e-9)
        # No core runs faster than on its project's fastest platform.
        self.assertGreater(result.efficiency, 0)
        self.assertLessEqual(result.efficiency, 1 + 1e-9)
