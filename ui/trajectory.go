package ui

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"

	"github.com/rlgate/rlgate/stages/grade"
	"github.com/rlgate/rlgate/stages/rollout"
)

// MaxRawBytes bounds the raw body a page shows: a request carries the
// whole conversation, and a page should not carry megabytes of it.
const MaxRawBytes = 256 << 10

// episodeSide is one evaluation's episode of the task, and, for an
// evaluation (a grading of a rollout), how the grading judged it. The
// page shows the two apart: View is what the policy saw and did, Grading
// what the grader decided with the gold, which the policy never saw.
type episodeSide struct {
	Run     string // the run the address names: a grading, or a rollout
	View    *rollout.View
	Grading *grade.TaskGrading
	Sample  int
	Samples []int // the samples the grading decided from, to switch to
}

// trajectoryBody is the trajectory page: one task, one or two sides.
type trajectoryBody struct {
	Task  string
	Sides []episodeSide
	URL   *url.URL
}

// trajectory is one task's episode under ?a (and, side by side, ?b): each
// an evaluation (a grading run of a rollout, whose chosen sample is shown)
// or a rollout run (sample 0); ?sample picks another sample for both.
func (s *Server) trajectory(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	task := q.Get("task")
	if task == "" || q.Get("a") == "" {
		return badRequest("name the task and the evaluation: /trajectory?task=TASK&a=RUN[&b=RUN]")
	}
	sample := -1
	if v := q.Get("sample"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return badRequest("sample %q: want a sample number from 0", v)
		}
		sample = n
	}
	b := trajectoryBody{Task: task, URL: r.URL}
	for _, run := range []string{q.Get("a"), q.Get("b")} {
		if run == "" {
			continue
		}
		side, err := s.episodeSide(r, run, task, sample)
		if err != nil {
			return err
		}
		b.Sides = append(b.Sides, side)
	}
	return s.render(w, r, "trajectory", "Task "+task, b)
}

// episodeSide reads run's episode of task: through its grading when run
// is one, directly when it is a rollout.
func (s *Server) episodeSide(r *http.Request, run, task string, sample int) (episodeSide, error) {
	ctx := r.Context()
	side := episodeSide{Run: run, Sample: max(sample, 0)}
	st, err := s.l.RunStatus(ctx, run)
	if err != nil {
		return side, err
	}
	rolloutRun := run
	if st.Stage != rollout.Stage {
		side.Grading, err = grade.ReadTaskGrading(ctx, s.l, run, task)
		if errors.Is(err, grade.ErrNotTrajectoryGrading) {
			return side, badRequest("%v", err)
		}
		if err != nil {
			return side, err
		}
		rolloutRun = side.Grading.Rollout
		if sample < 0 {
			side.Sample = side.Grading.Item.ChosenSample
		}
		for i := range side.Grading.Item.Samples {
			side.Samples = append(side.Samples, i)
		}
	}
	side.View, err = rollout.ReadView(ctx, s.l, rolloutRun, task, side.Sample)
	return side, err
}

// rawBody is the raw body page: one request or response as sent or
// received, shown as text, at most MaxRawBytes of it.
type rawBody struct {
	Run, Task    string
	Sample, Turn int
	Part         rollout.BodyPart
	Text         string
	Size         int
	Cut          bool
}

// trajectoryRaw is a raw body of one turn: ?run (a rollout), ?task,
// ?sample, ?turn, ?part (request or response).
func (s *Server) trajectoryRaw(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	b := rawBody{Run: q.Get("run"), Task: q.Get("task"), Part: rollout.BodyPart(q.Get("part"))}
	var err error
	if b.Sample, err = strconv.Atoi(q.Get("sample")); err != nil {
		return badRequest("sample %q: want a sample number", q.Get("sample"))
	}
	if b.Turn, err = strconv.Atoi(q.Get("turn")); err != nil {
		return badRequest("turn %q: want a turn number", q.Get("turn"))
	}
	if b.Part != rollout.PartRequest && b.Part != rollout.PartResponse {
		return badRequest("part %q: want %s or %s", b.Part, rollout.PartRequest, rollout.PartResponse)
	}
	raw, err := rollout.ReadBody(r.Context(), s.l, b.Run, b.Task, b.Sample, b.Turn, b.Part)
	if err != nil {
		return err
	}
	b.Size = len(raw)
	if len(raw) > MaxRawBytes {
		raw, b.Cut = raw[:MaxRawBytes], true
	}
	b.Text = string(raw)
	return s.render(w, r, "trajectory_raw", "Raw "+string(b.Part), b)
}

// rawURL is the address of a raw body of turn of the episode v shows.
func rawURL(v *rollout.View, turn int, part rollout.BodyPart) string {
	return "/trajectory/raw?" + url.Values{"run": {v.Run}, "task": {v.Episode.TaskID}, "sample": {strconv.Itoa(v.Episode.Sample)},
		"turn": {strconv.Itoa(turn)}, "part": {string(part)}}.Encode()
}

// The trajectory pages' helpers, beside the layout's (render.go).
func init() {
	funcs["rawURL"] = rawURL
	funcs["sampleURL"] = func(u *url.URL, n int) string {
		q := u.Query()
		q.Set("sample", strconv.Itoa(n))
		return u.Path + "?" + q.Encode()
	}
}
