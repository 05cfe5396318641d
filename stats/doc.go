// Package stats holds the statistics rlgate uses to decide whether one
// checkpoint beats another on the same tasks. Its functions are pure: no
// I/O, no global state, no clock; randomness comes only from a seed the
// caller passes and the result reports.
//
// # What each function computes
//
//   - Wilson and ClopperPearson: two-sided confidence intervals for an
//     accuracy, k successes in n trials, at level 1 − alpha. Wilson is the
//     score interval (Wilson 1927); ClopperPearson is the exact interval from
//     beta quantiles (Clopper and Pearson 1934). Both agree with statsmodels'
//     proportion_confint(method="wilson" / "beta").
//   - McNemar: McNemar's test (McNemar 1947) on the discordant counts b
//     (tasks only the first system solved) and c (only the second): exact
//     two-sided binomial p = min(1, 2·P(X ≤ min(b, c))) with
//     X ~ Binomial(b+c, 1/2); mid-p, the exact p less P(X = min(b, c))
//     (Fagerland, Lydersen and Laake 2013); and the chi-square statistic with
//     and without Edwards' continuity correction with its p-value on one
//     degree of freedom. These agree with statsmodels' mcnemar.
//   - Holm: Holm's step-down adjustment (Holm 1979) for several claims
//     tested at once, as statsmodels' multipletests(method="holm").
//   - PassAtK: the unbiased pass@k estimator 1 − C(n−c, k)/C(n, k) of Chen
//     et al. (2021), in product form.
//   - PairedBootstrap: percentile and BCa (Efron and Tibshirani 1993,
//     ch. 13–14) intervals for mean(x) − mean(y) over tasks, resampling
//     tasks with replacement; B resamples (10,000 by default) from a PCG
//     generator (math/rand/v2) seeded with the caller's seed. For 0/1
//     outcomes each replicate is drawn from the exact distribution of the
//     resampled count of +1 and −1 differences, which makes 10,000
//     resamples of 1,534 tasks take about a millisecond. Quantiles of the
//     replicates follow NumPy's default linear interpolation.
//   - MinDetectableEffect: the smallest accuracy difference the exact
//     McNemar test detects with given power on n tasks at a given
//     discordance rate, with power computed exactly (unconditionally on the
//     discordant count) and the difference found by bisection.
//
// # Conventions
//
// Levels are given as alpha (0.05 for 95%), as statsmodels takes them. A
// p-value is "below alpha" strictly.
//
// A statistic that is undefined for the input, such as the chi-square of
// McNemar's test when b + c = 0 (statsmodels gives NaN there), is a Value
// that says so: it prints "n/a", marshals to null and is left out of JSON
// objects. NaN and 0 never stand in for it. An interval that may be
// undefined, the BCa interval, is a nil *Interval. Inputs a function cannot
// answer for at all (no trials, k > n, mismatched lengths, B < 100, alpha
// outside (0, 1), NaN data) give an error wrapping one of the sentinel errors
// in errors.go, so callers can tell them apart with errors.Is.
//
// # References
//
//   - Chen, M. et al. (2021). Evaluating large language models trained on
//     code. arXiv:2107.03374.
//   - Clopper, C. J. and Pearson, E. S. (1934). The use of confidence or
//     fiducial limits illustrated in the case of the binomial. Biometrika
//     26(4).
//   - Efron, B. and Tibshirani, R. J. (1993). An Introduction to the
//     Bootstrap. Chapman & Hall.
//   - Fagerland, M. W., Lydersen, S. and Laake, P. (2013). The McNemar test
//     for binary matched-pairs data: mid-p and asymptotic are better than
//     exact conditional. BMC Medical Research Methodology 13:91.
//   - Holm, S. (1979). A simple sequentially rejective multiple test
//     procedure. Scandinavian Journal of Statistics 6(2).
//   - Hyndman, R. J. and Fan, Y. (1996). Sample quantiles in statistical
//     packages. The American Statistician 50(4). (Type 7 is NumPy's linear.)
//   - McNemar, Q. (1947). Note on the sampling error of the difference
//     between correlated proportions or percentages. Psychometrika 12(2).
//   - Wilson, E. B. (1927). Probable inference, the law of succession, and
//     statistical inference. JASA 22(158).
package stats
