package stats

import "errors"

var (
	// ErrEmpty is returned when there is nothing to compute on: zero trials,
	// zero samples, no pairs, no p-values.
	ErrEmpty = errors.New("no observations")
	// ErrCount is returned when a count is negative or exceeds its total,
	// such as k > n successes or c > n correct samples.
	ErrCount = errors.New("count out of range")
	// ErrLengthMismatch is returned when paired inputs differ in length, so
	// that they cannot be paired by task.
	ErrLengthMismatch = errors.New("paired inputs differ in length")
	// ErrResamples is returned when a bootstrap is asked for fewer than
	// MinResamples resamples, too few for its tail percentiles to mean anything.
	ErrResamples = errors.New("too few bootstrap resamples")
	// ErrProbability is returned when a probability argument (alpha, power,
	// a p-value) is NaN or outside its range.
	ErrProbability = errors.New("probability out of range")
	// ErrNonFinite is returned when data contain NaN or an infinity.
	ErrNonFinite = errors.New("non-finite value in data")
)
