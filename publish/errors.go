package publish

import "errors"

var (
	// ErrNotGated is returned by Publish when no gate verdict for the
	// checkpoint's model identity exists, or the latest one failed.
	ErrNotGated = errors.New("no passing gate verdict for this model")
	// ErrCheckpointChanged is returned by Publish when the checkpoint on
	// disk is no longer what its run recorded.
	ErrCheckpointChanged = errors.New("the checkpoint changed since its run recorded it")
	// ErrNoCheckpoint is returned when a run recorded no checkpoint output.
	ErrNoCheckpoint = errors.New("the run recorded no checkpoint output")
	// ErrTargetNotEmpty is returned for a publish directory that holds
	// files: a bundle is never written over or into another.
	ErrTargetNotEmpty = errors.New("directory exists and is not empty")
)
