package grade

import "errors"

// Sentinel errors. Test for them with errors.Is.
var (
	// ErrUnknownMetric is returned when a metric name is not bird, spider
	// or strict.
	ErrUnknownMetric = errors.New("unknown metric")

	// ErrResultTooLarge is returned, as a denotation's error, when a
	// query's result exceeds the grader's row or byte cap; the official
	// evaluators have no cap, so such a query counts as failed and says so.
	ErrResultTooLarge = errors.New("result exceeds the grading caps")

	// ErrNoPrediction is returned, as a denotation's error, when a
	// trajectory ended without SQL to grade.
	ErrNoPrediction = errors.New("no predicted SQL")

	// ErrPredictions is returned when a predictions file cannot be read;
	// the message names the line or key.
	ErrPredictions = errors.New("malformed predictions")

	// ErrUnknownFormat is returned when a predictions format name is not
	// bird-json, spider-txt or jsonl.
	ErrUnknownFormat = errors.New("unknown predictions format")

	// ErrDatabaseChanged is returned when a database's digest differs from
	// the one its import recorded.
	ErrDatabaseChanged = errors.New("database differs from the imported one")

	// ErrMode is returned when an evaluation mode cannot grade a rollout:
	// an unknown name, or n or k out of its range (CheckMode).
	ErrMode = errors.New("evaluation mode")

	// ErrGoldChanged is returned when a dataset's gold.jsonl is not the
	// file its import wrote.
	ErrGoldChanged = errors.New("gold file differs from the imported one")

	// ErrNotTrajectoryGrading is returned by ReadTaskGrading for a run
	// that is not a grading of a rollout, so it has no episodes to show.
	ErrNotTrajectoryGrading = errors.New("not a grading of a rollout")
)
