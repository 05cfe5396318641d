// Package rollout plays the multi-turn SQL protocol against an
// OpenAI-compatible endpoint (vLLM, SGLang, llama.cpp server, the
// reference policy) and records every episode in the ledger. It is the
// policy side of evaluation: it reads public tasks (package tasks) and
// never imports gold or grading; grading reads what it recorded once the
// run is frozen.
//
// # Protocol
//
// A Protocol fixes what the policy sees and may spend: prompt templates,
// observation profile, turns (6), tokens per turn and per request
// context, SQL executions per episode (5) and their timeout (10 s),
// format-correction prompts (3), stop strings and sampling. It is one
// versioned object (ProtocolVersion); its Digest, the BLAKE3 of its
// canonical JSON, is recorded with the run and must match for a run to be
// resumed. DefaultProtocol is built in; LoadProtocol reads a YAML or JSON
// file over it, refusing unknown fields.
//
// # Episodes
//
// An episode is one (task, sample). It starts with the system and user
// prompts; each reply is parsed by sqlenv.ParseTurn. A <sql> turn is
// executed read-only (sqlenv.Executor, the task's database) and its
// observation comes back as a user turn with the turns left; a <solution>
// turn ends the episode with its final SQL; a malformed reply gets a
// correction prompt quoting FormatError.Hint. An episode ends with one
// StopReason: solution, max_turns (the last allowed reply was not a
// solution; an <sql> in it is not run), budget (the request context would
// pass context_tokens, the server counted more than it, or the SQL budget
// is spent), format_failures, http_error (a 4xx other than 429), or
// transport_error. All but transport_error end a finished episode. Every
// reply counts as a turn, corrections included. A reply whose closing tag the engine
// stripped at its stop string is accepted and the tag restored in the
// history.
//
// Each request carries n = 1, the protocol's sampling with seed
// Seed+sample, and user = "<task id>#<sample>". Token counts come from the
// response's usage; without it they are estimated as a quarter of the
// bytes and the turn and episode are marked estimated.
//
// # Endpoint
//
// Requests go to <endpoint>/v1/chat/completions (an endpoint ending in
// /v1 or /chat/completions is used as given). Before a run is started or
// resumed, one GET of the models route beside it (<endpoint>/v1/models)
// checks that the endpoint can be used: a transport error (connection
// refused, no such host, not an http URL, timeout), 401, 403 or a 5xx
// refuses the run with ErrEndpoint before anything is recorded; any other
// answer, 404 included (some servers have no models route), passes.
//
// The same reply says which model the endpoint serves, where it says:
// rlgate serve-policy and serve-replay add "identity" (blake3:HEX) to the
// model's entry of the OpenAI model list; vLLM, SGLang and llama.cpp add
// nothing. A reported identity is recorded in run.start with
// model_identity_source "server"; Options.ModelIdentity, the user's
// assertion, must then be the same. With no endpoint reporting one, the
// assertion is recorded as "asserted". Before anything is recorded,
// ErrIdentity refuses an assertion the endpoint contradicts, a fleet whose
// endpoints report different identities (or some report one and some
// none, without an assertion), and a resume under another identity than
// the run recorded.
//
// The API key and the endpoint's user information and secret query values
// are never recorded nor printed: a server or gateway may echo them in a
// reply, so every string of a recorded episode and every error is masked
// of them and of what ledger's redaction rule finds (docs/FORMAT.md,
// Secrets). An episode with nothing to mask is recorded byte for byte.
//
// # Fleet
//
// Options.Endpoints plays one run across several servers of the same
// model (a vLLM fleet). Every one is probed, at once, and the run is
// refused unless each passes. Each request goes to the endpoint with the
// fewest requests in flight, ties to the first given, and a retry to one
// the request has not failed on when there is one; an episode's turns may
// be answered by different servers. DrainAfter transport failures in a row
// drain an endpoint: it gets no new request, its requests in flight are
// abandoned and retried on the others, and attempts that failed on it no
// longer count against MaxAttempts. The last endpoint in use is never
// drained, so a single endpoint behaves as it always has and a fleet
// whose servers all fail ends failed. Each endpoint's requests, failures,
// retries and latency (EndpointStats) go to the summary and run.end; the
// drain is printed when it happens. A run may be resumed on another list.
//
// Network errors, timeouts, 5xx, 429 and replies that are not a chat
// completion are transport failures: retried with doubling waits up to
// ClientOptions.MaxAttempts. When the last attempt fails too, the episode
// ends with transport_error: it is recorded, with every attempt, but it is
// not finished. Another 4xx ends the episode with http_error, a finished
// episode, as the model's own failures are. The run goes on either way.
// When the run's context ends, episodes in flight are abandoned and
// played again on resume.
//
// # Recording
//
// Played episodes are buffered and flushed every 200 ms or 64 episodes
// as one blob of JSON lines (one Episode per line: every turn with its
// request and response bodies byte for byte, failed attempts included)
// and one entry of kind trajectories (Trajectories) listing each episode's
// task, sample, stop reason, turns, tokens, final SQL and line. A crash
// loses at most the unflushed episodes. The run.start entry (Start)
// records the protocol and its digest, model, endpoint (a fleet's list
// too), tasks digest and task set; run.end (End) the totals over finished
// episodes, the number of (task, sample) pairs left unfinished, each
// endpoint's counts and, for a failed run, the reason.
// A run ends ok only when every pair has a finished episode; with
// unfinished ones it ends failed and Run returns ErrIncomplete.
// ReadView reads one recorded episode back for a reader, with its
// observations as tables and the protocol's budgets beside what it spent,
// and ReadBody one raw request or response of it; neither says how the
// episode was graded, which package grade reads apart (ReadTaskGrading).
//
// # Resume
//
// Run with the id of a run that was interrupted or failed continues it
// (ledger.ResumeRun) and plays only the (task, sample) pairs without a
// finished episode, so no finished episode is played or recorded twice;
// an unfinished one is played again and recorded anew. A run that ended
// ok is reported complete.
//
// # Replay
//
// Replay serves a recorded run as an OpenAI-compatible endpoint: a request
// is matched to its recorded turn by its user field and the number of
// assistant messages it carries, and answered with the recorded status and
// body: the finished episode of a pair, or else its last unfinished one,
// whose transport failure is served again. The ReplayHeader says whether
// the request was byte-identical to the recorded one.
package rollout
