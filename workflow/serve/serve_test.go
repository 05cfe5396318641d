package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlgate/rlgate/lab/refpolicy"
	"github.com/rlgate/rlgate/lab/refpolicy/train"
)

// listenBase serves a Base checkpoint on a free port until the test ends.
func listenBase(t *testing.T) (*Server, *train.Trained) {
	t.Helper()
	base, err := train.Init(t.Context(), filepath.Join(t.TempDir(), "base"), 1)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Listen(t.Context(), base.Out, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, base
}

// TestServeAndRun: the endpoint lists the reference policy with the
// checkpoint's model identity (the one training printed); a command run
// against it sees {endpoint} replaced and RLGATE_ENDPOINT and
// RLGATE_MODEL_IDENTITY set, and its exit code comes back.
func TestServeAndRun(t *testing.T) {
	s, base := listenBase(t)
	if s.ModelIdentity != base.ModelIdentity || s.Model != refpolicy.ModelName || !strings.HasSuffix(s.URL, "/v1") {
		t.Fatalf("endpoint %+v; want model %s, identity %s", s.Endpoint, refpolicy.ModelName, base.ModelIdentity)
	}
	res, err := http.Get(s.URL + "/models")
	if err != nil {
		t.Fatal(err)
	}
	var models struct {
		Data []struct{ ID, Identity string }
	}
	err = json.NewDecoder(res.Body).Decode(&models)
	res.Body.Close()
	if err != nil || len(models.Data) != 1 || models.Data[0].ID != refpolicy.ModelName || models.Data[0].Identity != base.ModelIdentity {
		t.Errorf("/v1/models: %v, %+v", err, models)
	}

	var out strings.Builder
	code, err := s.Run(t.Context(), []string{"sh", "-c", `echo "$RLGATE_ENDPOINT $RLGATE_MODEL_IDENTITY $1"; exit 7`, "sh", "{endpoint}"}, &out, io.Discard)
	if err != nil || code != 7 {
		t.Fatalf("run: code %d, %v; want 7", code, err)
	}
	if got, want := strings.TrimSpace(out.String()), s.URL+" "+base.ModelIdentity+" "+s.URL; got != want {
		t.Errorf("the command saw %q, want %q", got, want)
	}
	if _, err := s.Run(t.Context(), []string{filepath.Join(t.TempDir(), "none")}, io.Discard, io.Discard); err == nil {
		t.Error("a command that cannot start: no error")
	}
}

// TestRunIsSupervised: a command run against the endpoint is supervised
// as a stage of rlgate run is (runner.Command): when rlgate is stopped it
// is sent SIGTERM, so it can finish cleanly, rather than killed.
func TestRunIsSupervised(t *testing.T) {
	s, _ := listenBase(t)
	ctx, cancel := context.WithCancel(t.Context())
	r, w := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := s.Run(ctx, []string{"sh", "-c", `trap 'echo terminated; exit 0' TERM; echo ready; while :; do sleep 1; done`}, w, io.Discard)
		w.Close()
		done <- err
	}()
	lines := bufio.NewScanner(r)
	if !lines.Scan() || lines.Text() != "ready" {
		t.Fatalf("the command did not start: %q", lines.Text())
	}
	cancel()
	if !lines.Scan() || lines.Text() != "terminated" {
		t.Errorf("after cancel the command printed %q; want its SIGTERM handler's \"terminated\"", lines.Text())
	}
	go io.Copy(io.Discard, r)
	if err := <-done; err != context.Canceled {
		t.Errorf("run: %v, want %v", err, context.Canceled)
	}
}
