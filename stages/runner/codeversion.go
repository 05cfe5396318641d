package runner

import (
	"bytes"
	"context"
	"os/exec"
	"strings"

	"github.com/rlgate/rlgate/ledger"
)

// CodeVersion is the state of the git work tree a stage ran from.
type CodeVersion struct {
	Commit    string         `json:"commit,omitempty"`
	Dirty     bool           `json:"dirty"`
	Diff      *ledger.Digest `json:"diff,omitempty"` // blob of `git diff HEAD` when dirty
	Untracked int            `json:"untracked"`      // files git does not track (not in Diff)
	NotGit    string         `json:"not_git,omitempty"`
}

// captureCode records the commit, whether the tree is dirty, and the diff
// against HEAD as a blob, so the exact code that ran can be rebuilt; the
// secrets the run's redaction removed (mask) are masked in the diff too.
func captureCode(ctx context.Context, l *ledger.Ledger, dir string, mask *ledger.Masker) (CodeVersion, error) {
	git := func(args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = dir
		return cmd.Output()
	}
	head, err := git("rev-parse", "HEAD")
	if err != nil {
		return CodeVersion{NotGit: "not a git work tree with a commit (or git is missing)"}, nil
	}
	cv := CodeVersion{Commit: strings.TrimSpace(string(head))}
	status, err := git("status", "--porcelain")
	if err != nil {
		return cv, err
	}
	for _, line := range strings.Split(strings.TrimRight(string(status), "\n"), "\n") {
		switch {
		case line == "":
		case strings.HasPrefix(line, "??"):
			cv.Untracked++
		default:
			cv.Dirty = true
		}
	}
	if cv.Dirty {
		diff, err := git("diff", "HEAD", "--binary")
		if err != nil {
			return cv, err
		}
		d, _, err := l.PutBlob(bytes.NewReader(mask.Known(diff)))
		if err != nil {
			return cv, err
		}
		cv.Diff = &d
	}
	return cv, nil
}
