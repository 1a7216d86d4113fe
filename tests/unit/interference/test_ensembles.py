"""Tree ensembles predict through each tree: the same numbers as scikit-learn."""

from __future__ import annotations

import numpy as np
import testtools
from sklearn.ensemble import BaggingRegressor, RandomForestRegressor
from sklearn.tree import DecisionTreeRegressor

from hpc_nova_scheduler.interference.ensembles import mean_of_trees


class TestMeanOfTrees(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        rng = np.random.default_rng(4)
        self.x = rng.normal(size=(300, 7)) * [1, 10, 100, 0.1, 1e3, 1, 5]
        self.y = self.x[:, 0] * self.x[:, 2] + np.sin(self.x[:, 4]) + rng.normal(size=300)
        self.new = rng.normal(size=(77, 7)) * [1, 10, 100, 0.1, 1e3, 1, 5]

    def test_random_forest(self) -> None:
        forest = RandomForestRegressor(n_estimators=22, max_features="sqrt", random_state=0)
        forest.fit(self.x, self.y)
        np.testing.assert_array_equal(forest.predict(self.new), mean_of_trees(forest, self.new))

    def test_bag_with_its_own_feature_orders(self) -> None:
        for bootstrap_features in (False, True):
            bag = BaggingRegressor(
                estimator=DecisionTreeRegressor(min_samples_leaf=2, ccp_alpha=0.01),
                n_estimators=30,
                max_features=0.7,
                bootstrap_features=bootstrap_features,
                random_state=1,
            ).fit(self.x, self.y)
            np.testing.assert_array_equal(bag.predict(self.new), mean_of_trees(bag, self.new))

    def test_no_rows(self) -> None:
        forest = RandomForestRegressor(n_estimators=3, random_state=0).fit(self.x, self.y)
        self.assertEqual((0,), mean_of_trees(forest, np.zeros((0, 7))).shape)
