"""How well a fitted model explains measurements: R^2 and k-fold splits.

Shared by every model that ``model fit`` refits, so that all report the
same statistics over the same kind of folds.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def r_squared(measured: Sequence[float], predicted: Sequence[float]) -> float:
    """1 - residual / spread; 1.0 when the measurements do not vary."""
    measured = np.asarray(measured, dtype=float)
    predicted = np.asarray(predicted, dtype=float)
    spread = float(((measured - measured.mean()) ** 2).sum())
    if spread <= 0:
        return 1.0
    return 1.0 - float(((measured - predicted) ** 2).sum()) / spread


def folds(count: int, k: int, seed: int) -> list[tuple[list[int], list[int]]]:
    """(training, held-out) sample indices of each of ``k`` shuffled folds."""
    order = np.random.default_rng(seed).permutation(count).tolist()
    held_out = [order[fold::k] for fold in range(k)]
    return [
        ([i for i in order if i not in held], sorted(held)) for held in (set(h) for h in held_out)
    ]
