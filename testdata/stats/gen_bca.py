# Reference BCa intervals for stats.PairedBootstrap, from scipy.stats.bootstrap.
import json, sys
import numpy as np, scipy
from scipy import stats

rs = np.random.RandomState(20261130)
cases = []
for name, n in [("skewed-n40", 40), ("skewed-n120", 120)]:
    y = rs.normal(size=n)
    x = y + rs.exponential(size=n) - 0.8
    x = [float(v) for v in x]
    y = [float(v) for v in y]
    lows, highs = [], []
    for seed in range(5):
        r = stats.bootstrap((np.array(x), np.array(y)), lambda a, b, axis=-1: np.mean(a, axis=axis) - np.mean(b, axis=axis),
                            paired=True, vectorized=True, confidence_level=0.95, n_resamples=200000,
                            method="BCa", random_state=np.random.default_rng(seed))
        lows.append(float(r.confidence_interval.low)); highs.append(float(r.confidence_interval.high))
    cases.append({"name": name, "x": x, "y": y, "confidence_level": 0.95, "n_resamples": 200000,
                  "bca_low": float(np.mean(lows)), "bca_high": float(np.mean(highs)),
                  "bca_low_by_seed": lows, "bca_high_by_seed": highs,
                  "estimate": float(np.mean(np.array(x) - np.array(y)))})
json.dump({"about": "BCa 95%% intervals of mean(x)-mean(y), paired, from scipy.stats.bootstrap(method='BCa', paired=True, n_resamples=200000) with five generator seeds (0-4); bca_low/bca_high are their means. scipy %s, numpy %s (Debian python3-scipy). Regenerate: python3 gen_bca.py > bca-vectors.json" % (scipy.__version__, np.__version__),
           "cases": cases}, sys.stdout, indent=1)
