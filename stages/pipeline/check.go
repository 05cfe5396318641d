package pipeline

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rlgate/rlgate/stages/runner"
	"golang.org/x/sys/unix"
)

// problems lists what would fail once stage s (whose runner spec is spec)
// runs, as far as can be told without running anything: its command is
// not found, or the directory of an output or of a metrics file cannot be
// made. A dry run reports them, since a stage that fails on them may do
// so after its upstream stages spent days of GPU time.
func (f *File) problems(s *Stage, spec runner.Spec, environ []string) []string {
	var out []string
	if p := f.commandProblem(s, environ); p != "" {
		out = append(out, p)
	}
	for _, w := range written(spec) {
		if why := creatable(filepath.Dir(w.Path)); why != "" {
			rel, err := filepath.Rel(spec.Dir, w.Path)
			if err != nil {
				rel = w.Path
			}
			out = append(out, fmt.Sprintf("%s (%s): %s", w.Name, rel, why))
		}
	}
	return out
}

// written names the files and directories a stage writes: its outputs
// ("output NAME") and its metrics files ("metrics file").
func written(spec runner.Spec) []runner.Named {
	var out []runner.Named
	for _, o := range spec.Outputs {
		out = append(out, runner.Named{Name: "output " + o.Name, Path: o.Path})
	}
	for _, m := range spec.Metrics {
		out = append(out, runner.Named{Name: "metrics file", Path: m.Path})
	}
	return out
}

// shellWords are the shell's own words, which no PATH lookup finds.
var shellWords = []string{"cd", "exec", "export", "set", "unset", "source", ".", "eval", "if", "for", "while", "until", "case",
	"true", "false", "test", "[", "echo", "printf", "exit", "umask", "ulimit", "command", "time", "{", "(", "!"}

// commandProblem says why the stage's command would not be found: the
// first word of its argv, or of its shell string (the first word only:
// "python3 -m x" needs python3), looked up on the stages' PATH, or, when
// it has a slash, as a file relative to the pipeline unless a stage
// writes it. Shell words, assignments and words the shell expands are
// not looked up.
func (f *File) commandProblem(s *Stage, environ []string) string {
	word := s.Cmd[0]
	if len(s.Cmd) == 3 && s.Cmd[0] == "sh" && s.Cmd[1] == "-c" {
		fields := strings.Fields(s.Cmd[2])
		if len(fields) == 0 {
			return "its command is empty"
		}
		word = fields[0]
		if slices.Contains(shellWords, word) || strings.ContainsAny(word, "=$`'\"\\*?~;&|<>(){}") {
			return ""
		}
	}
	if strings.Contains(word, "/") {
		p := word
		if !filepath.IsAbs(p) {
			p = filepath.Join(filepath.Dir(f.Path), p)
		}
		if _, err := os.Stat(p); err == nil || f.writes(p) {
			return ""
		}
		return fmt.Sprintf("its command %s is missing and no stage of the pipeline writes it", word)
	}
	if _, ok := runner.LookPathIn(environ, word); ok {
		return ""
	}
	if !slices.ContainsFunc(environ, func(kv string) bool { return strings.HasPrefix(kv, "PATH=") }) {
		if _, err := exec.LookPath(word); err == nil {
			return ""
		}
	}
	return fmt.Sprintf("its command %s is not on PATH. Try: install it, or put its directory on PATH", word)
}

// writes reports whether a stage of f declares p, or a directory holding
// it, as an output.
func (f *File) writes(p string) bool {
	base := filepath.Dir(f.Path)
	for _, s := range f.Stages {
		for _, o := range s.Outs {
			if !filepath.IsAbs(o) {
				o = filepath.Join(base, o)
			}
			if rel, err := filepath.Rel(o, p); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				return true
			}
		}
	}
	return false
}

// creatable says why directory dir could not be made (repro makes an
// output's directory before the stage runs): a file stands where a
// directory must be, or the nearest existing directory above it is not
// writable; "" when it exists or can be made.
func creatable(dir string) string {
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		switch {
		case err == nil && !fi.IsDir():
			return fmt.Sprintf("%s is a file, not a directory", d)
		case err == nil && d == dir:
			return ""
		case err == nil:
			if unix.Access(d, unix.W_OK) != nil {
				return fmt.Sprintf("directory %s cannot be made: %s is not writable", dir, d)
			}
			return ""
		case !errors.Is(err, fs.ErrNotExist):
			return fmt.Sprintf("directory %s cannot be made: %v", dir, err)
		case d == filepath.Dir(d):
			return fmt.Sprintf("directory %s cannot be made", dir)
		}
	}
}

// makeOutputDirs makes the directories a stage's outputs and metrics
// files go into, so a command that writes "> evals/base.json", or a
// trainer logging to logs/rl1.jsonl, finds the directory there.
func makeOutputDirs(spec runner.Spec) error {
	for _, w := range written(spec) {
		if err := os.MkdirAll(filepath.Dir(w.Path), 0o755); err != nil {
			return fmt.Errorf("stage %s: %s: %w", spec.Stage, w.Name, err)
		}
	}
	return nil
}
