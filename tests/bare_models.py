"""A cost model written against the bare contract, as a third party's first plug-in might be."""

import numpy as np

from costlab.models import CostModel


class FitOnly(CostModel):
    """fit, predict (every score 0), save and load; no update()."""

    name = "fit-only"

    def fit(self, features, latency_s, groups):
        return self

    def predict(self, features):
        return np.zeros(len(features))

    def save(self, path):
        pass

    @classmethod
    def load(cls, path):
        return cls()
