package rollout

import "errors"

// Sentinel errors. Test for them with errors.Is.
var (
	// ErrProtocol is returned when a protocol, from a file or built in
	// code, is malformed or out of range; the message names the field.
	ErrProtocol = errors.New("invalid protocol")

	// ErrRunMismatch is returned when an existing run is continued with a
	// different protocol, model, task file or task set, or is not a
	// rollout: resuming it would mix two evaluations under one id.
	ErrRunMismatch = errors.New("run was started with different settings")

	// ErrDuplicateEpisode is returned when a run's trajectories entries
	// name one (task, sample) twice, which a correct recorder never writes.
	ErrDuplicateEpisode = errors.New("episode recorded twice")

	// ErrEndpoint is returned before any episode when the endpoint cannot
	// be used: nothing answers there, it is not an http(s) URL, or it
	// refused the API key or answered the probe with a server error.
	ErrEndpoint = errors.New("endpoint unusable")

	// ErrIdentity is returned before anything is recorded when the
	// endpoints report a model identity other than the one asserted
	// (Options.ModelIdentity) or than the one the resumed run recorded,
	// or report different ones: the run would record episodes of one
	// model under another's identity.
	ErrIdentity = errors.New("model identity refused")

	// ErrIncomplete is returned by Run when episodes ended on a transport
	// failure: they are recorded as unfinished (StopTransport), the run is
	// closed as failed, and running it again plays them.
	ErrIncomplete = errors.New("rollout incomplete")

	// ErrReplay is returned by the replay endpoint's constructor when the
	// run has no trajectories to replay.
	ErrReplay = errors.New("nothing to replay")
)
