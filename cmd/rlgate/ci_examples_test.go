package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// ciInstall is how the CI examples get rlgate: from its module path, which
// works in a lab's repository, where go build ./cmd/rlgate finds no go.mod.
var ciInstall = regexp.MustCompile(`(?m)\Ago install "?github\.com/rlgate/rlgate/cmd/rlgate@\$\{RLGATE_VERSION:-latest\}"?$`)

// ciStep is one shell command of a CI example, with the environment the
// CI system gives it.
type ciStep struct {
	run string
	env map[string]string
}

// gateCIExamples runs the commands of examples/ci's GitHub Actions and
// GitLab jobs as a lab's repository holds them: in a directory outside
// this module holding only gate.yaml (the example's policy) and the
// experiment's ledger and data as the artifact (.rlgate/, experiment-data/).
// The install step is checked to start with go install of the module path
// and stands for this test binary run as rlgate (demoExe: the test has no
// network, and it is this package's main built already); every other
// command runs as written, and the job passes.
func gateCIExamples(t *testing.T, x *gateExperiment) {
	exe := demoExe(t)
	_, head, errOut := rlgate(t, "--ledger", x.ledger, "head")
	if head = strings.TrimSpace(head); head == "" {
		t.Fatalf("head: %s", errOut)
	}
	jobs := map[string]func(map[string]any) []ciStep{
		"github-actions.yml": func(y map[string]any) (out []ciStep) {
			steps, _ := y["jobs"].(map[string]any)["gate"].(map[string]any)["steps"].([]any)
			for _, s := range steps {
				m := s.(map[string]any)
				run, ok := m["run"].(string)
				if !ok {
					continue // uses: checkout, setup-go, the artifact: the directory below
				}
				env := map[string]string{}
				vars, _ := m["env"].(map[string]any)
				for k := range vars {
					env[k] = "" // ${{ vars.X }}: unset unless below
				}
				out = append(out, ciStep{run, env})
			}
			return out
		},
		"gitlab-ci.yml": func(y map[string]any) (out []ciStep) {
			script, _ := y["gate"].(map[string]any)["script"].([]any)
			for _, s := range script {
				out = append(out, ciStep{s.(string), map[string]string{}})
			}
			return out
		},
	}
	for file, steps := range jobs {
		t.Run(file, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("../../examples/ci", file))
			if err != nil {
				t.Fatal(err)
			}
			var y map[string]any
			if err := yaml.Unmarshal(raw, &y); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			repo := t.TempDir()
			policy, err := os.ReadFile("../../examples/ci/policy.yaml")
			if err != nil {
				t.Fatal(err)
			}
			gateWrite(t, filepath.Join(repo, "gate.yaml"), string(policy))
			if err := os.CopyFS(filepath.Join(repo, ".rlgate"), os.DirFS(x.ledger)); err != nil {
				t.Fatal(err)
			}
			// The artifact's experiment-data/ is empty here: the databases
			// are still where the import read them, which the gate looks at
			// after the data roots (TestDemo's moved copy gates from a data
			// root alone).
			if err := os.Mkdir(filepath.Join(repo, "experiment-data"), 0o755); err != nil {
				t.Fatal(err)
			}
			installed := t.TempDir()
			ss := steps(y)
			if len(ss) == 0 || !ciInstall.MatchString(strings.TrimSpace(ss[0].run)) {
				t.Fatalf("%s: the first command does not install rlgate from its module path: %+v", file, ss)
			}
			if err := os.Link(exe, filepath.Join(installed, "rlgate")); err != nil {
				t.Fatal(err)
			}
			for _, s := range ss[1:] {
				cmd := exec.Command("bash", "-e", "-c", s.run)
				cmd.Dir = repo
				cmd.Env = []string{"PATH=" + installed + string(os.PathListSeparator) + os.Getenv("PATH"), "EXPERIMENT_HEAD=" + head}
				for _, kv := range os.Environ() {
					if k, _, _ := strings.Cut(kv, "="); k != "PATH" && !strings.HasPrefix(k, "RLGATE_") {
						cmd.Env = append(cmd.Env, kv)
					}
				}
				for k, v := range s.env {
					if k != "EXPERIMENT_HEAD" {
						cmd.Env = append(cmd.Env, k+"="+v)
					}
				}
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("%s: %s: %v\n%s", file, s.run, err, out)
				}
			}
			if _, err := os.Stat(filepath.Join(repo, "gate.xml")); err != nil {
				t.Errorf("%s: the gate wrote no JUnit file: %v", file, err)
			}
		})
	}
}
