package pipeline

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/rlgate/rlgate/ledger/untrusted"
	"go.yaml.in/yaml/v3"
)

// File is a parsed rlgate.yaml.
type File struct {
	Path   string
	Stages []*Stage // in dependency order
}

// Stage is one stage of a pipeline file. Paths are relative to the file.
type Stage struct {
	Name    string
	Cmd     Cmd
	Deps    map[string]string // input name -> path
	Outs    map[string]string // output name -> path
	Params  map[string]string // recorded and compared; passed as RLGATE_PARAM_<KEY>
	Configs []string          // config files, hashed in canonical form
	Metrics []string          // FILE[:FORMAT]
	Timeout Duration
	GPU     string // auto (default) or off
	// Gate is a gate policy file (relative to the pipeline file), or
	// "paper-grade" for the built-in one, checked once the stage is up to
	// date; stages downstream of a failed gate are not run.
	Gate string
	// Upstream are the stages whose outputs this stage reads.
	Upstream []string
}

// Cmd is a stage's command: a YAML list is an argv run as is; a string is
// a shell command run by "sh -c", which the file then says plainly.
type Cmd []string

// Duration is a time.Duration written as "90m" or "2h".
type Duration time.Duration

// stageKeys are the keys a stage may have, and what each expects.
var stageKeys = []struct{ key, want string }{
	{"cmd", "a string (run by sh -c) or a list of strings (an argv)"},
	{"deps", "a mapping NAME: PATH, or a list of paths (each named by its path)"},
	{"outs", "a mapping NAME: PATH, or a list of paths (each named by its path)"},
	{"params", "a mapping KEY: VALUE of scalars"},
	{"configs", "a list of paths"},
	{"metrics", "a list of FILE[:FORMAT]"},
	{"timeout", `a duration such as "90m" or "2h"`},
	{"gpu", "auto or off"},
	{"gate", "a gate policy file, or paper-grade"},
}

// fieldError is a stage's key whose value is not what the key expects.
type fieldError struct {
	line int
	key  string
	msg  string
}

// decodeStage reads one stage's mapping, naming the key, what it expects
// and the line of any value that does not fit.
func decodeStage(name string, n *yaml.Node) (*Stage, *fieldError) {
	s := &Stage{Name: name}
	if n.Kind != yaml.MappingNode {
		return nil, &fieldError{n.Line, "stage", "want a mapping of " + keyList()}
	}
	seen := map[string]bool{}
	for i := 0; i < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		want := ""
		for _, sk := range stageKeys {
			if sk.key == k.Value {
				want = sk.want
			}
		}
		if want == "" {
			return nil, &fieldError{k.Line, k.Value, "unknown key (want " + keyList() + ")"}
		}
		if seen[k.Value] {
			return nil, &fieldError{k.Line, k.Value, "given twice"}
		}
		seen[k.Value] = true
		if err := decodeKey(s, k.Value, v); err != nil {
			return nil, &fieldError{v.Line, k.Value, "want " + want + err.Error()}
		}
	}
	return s, nil
}

func keyList() string {
	keys := make([]string, len(stageKeys))
	for i, sk := range stageKeys {
		keys[i] = sk.key
	}
	return strings.Join(keys, ", ")
}

// decodeKey sets one key of s. Its error completes "want ...": an empty
// one for a value of the wrong shape, else ", " and what is wrong.
func decodeKey(s *Stage, key string, v *yaml.Node) error {
	var err error
	switch key {
	case "cmd":
		if v.Kind == yaml.ScalarNode {
			s.Cmd = Cmd{"sh", "-c", v.Value}
			return nil
		}
		s.Cmd, err = scalars(v)
	case "deps":
		s.Deps, err = namedPaths(v)
	case "outs":
		s.Outs, err = namedPaths(v)
	case "params":
		s.Params, err = scalarMap(v)
	case "configs":
		s.Configs, err = scalars(v)
	case "metrics":
		s.Metrics, err = scalars(v)
	case "timeout":
		if v.Kind != yaml.ScalarNode {
			return errShape(v)
		}
		d, perr := time.ParseDuration(v.Value)
		if perr != nil {
			return fmt.Errorf(", got %q", v.Value)
		}
		s.Timeout = Duration(d)
	case "gpu":
		if v.Kind != yaml.ScalarNode || v.Value != "auto" && v.Value != "off" {
			return fmt.Errorf(", got %q", v.Value)
		}
		s.GPU = v.Value
	case "gate":
		if v.Kind != yaml.ScalarNode || v.Value == "" {
			return errShape(v)
		}
		s.Gate = v.Value
	}
	return err
}

// errShape says which kind of YAML value was found instead.
func errShape(v *yaml.Node) error { return fmt.Errorf(", got %s", shape(v)) }

func shape(v *yaml.Node) string {
	return map[yaml.Kind]string{yaml.ScalarNode: "a scalar", yaml.SequenceNode: "a list", yaml.MappingNode: "a mapping", yaml.AliasNode: "an alias"}[v.Kind]
}

// scalars reads a list of scalars.
func scalars(v *yaml.Node) ([]string, error) {
	if v.Kind != yaml.SequenceNode {
		return nil, errShape(v)
	}
	out := make([]string, len(v.Content))
	for i, e := range v.Content {
		if e.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf(", got %s at line %d", shape(e), e.Line)
		}
		out[i] = e.Value
	}
	return out, nil
}

// scalarMap reads a mapping of scalars to scalars.
func scalarMap(v *yaml.Node) (map[string]string, error) {
	if v.Kind != yaml.MappingNode {
		return nil, errShape(v)
	}
	out := make(map[string]string, len(v.Content)/2)
	for i := 0; i < len(v.Content); i += 2 {
		k, e := v.Content[i], v.Content[i+1]
		if k.Kind != yaml.ScalarNode || e.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf(", got a non-scalar at line %d", e.Line)
		}
		if _, dup := out[k.Value]; dup {
			return nil, fmt.Errorf(", got %q twice at line %d", k.Value, k.Line)
		}
		out[k.Value] = e.Value
	}
	return out, nil
}

// namedPaths reads deps or outs: a mapping NAME: PATH, or a list of paths
// as dvc.yaml writes them, where each path names itself (cleaned, with
// forward slashes: "./data//in.txt" is named "data/in.txt"). Two entries
// with one name (a path listed twice) are refused.
func namedPaths(v *yaml.Node) (map[string]string, error) {
	if v.Kind == yaml.MappingNode {
		return scalarMap(v)
	}
	paths, err := scalars(v)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(paths))
	for i, p := range paths {
		name := filepath.ToSlash(filepath.Clean(p))
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf(", got %s twice at line %d", name, v.Content[i].Line)
		}
		out[name] = p
	}
	return out, nil
}

type fileYAML struct {
	Stages yaml.Node `yaml:"stages"`
}

// Load reads and checks a pipeline file: unknown fields are refused, every
// stage needs a cmd, an output path has one producer, and the stages form
// no cycle. Stages come back in dependency order (ties in file order).
func Load(path string) (*File, error) {
	raw, err := untrusted.ReadFile(path, untrusted.PipelineLimit)
	if err != nil {
		return nil, fmt.Errorf("pipeline: %w", err)
	}
	var top fileYAML
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&top); err != nil {
		return nil, fmt.Errorf("pipeline %s: %w", path, err)
	}
	if top.Stages.Kind != yaml.MappingNode || len(top.Stages.Content) == 0 {
		return nil, fmt.Errorf("pipeline %s: want a non-empty 'stages:' mapping of stage name to stage", path)
	}
	f := &File{Path: path}
	for i := 0; i < len(top.Stages.Content); i += 2 {
		name, node := top.Stages.Content[i].Value, top.Stages.Content[i+1]
		s, fe := decodeStage(name, node)
		if fe != nil {
			return nil, fmt.Errorf("pipeline %s:%d: stage %q: %s: %s", path, fe.line, name, fe.key, fe.msg)
		}
		if len(s.Cmd) == 0 {
			return nil, fmt.Errorf("pipeline %s:%d: stage %q: no cmd", path, node.Line, name)
		}
		for out := range s.Outs {
			if _, both := s.Deps[out]; both {
				return nil, fmt.Errorf("pipeline %s:%d: stage %q: %q names both a dep and an out; give them different names", path, node.Line, name, out)
			}
		}
		f.Stages = append(f.Stages, s)
	}
	if err := f.order(); err != nil {
		return nil, fmt.Errorf("pipeline %s: %w", path, err)
	}
	return f, nil
}

// order links each stage to the stages producing its deps and sorts the
// stages topologically.
func (f *File) order() error {
	producer := map[string]string{}
	for _, s := range f.Stages {
		for _, p := range s.Outs {
			p = filepath.Clean(p)
			if other, ok := producer[p]; ok {
				return fmt.Errorf("output %s is written by both %q and %q", p, other, s.Name)
			}
			producer[p] = s.Name
		}
	}
	byName := map[string]*Stage{}
	for _, s := range f.Stages {
		byName[s.Name] = s
		for _, p := range sortedValues(s.Deps) {
			if up := producerOf(producer, filepath.Clean(p)); up != "" && up != s.Name && !slices.Contains(s.Upstream, up) {
				s.Upstream = append(s.Upstream, up)
			}
		}
	}
	var out []*Stage
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(s *Stage, path []string) error
	visit = func(s *Stage, path []string) error {
		switch state[s.Name] {
		case 1:
			return fmt.Errorf("stages form a cycle: %s", strings.Join(append(path, s.Name), " -> "))
		case 2:
			return nil
		}
		state[s.Name] = 1
		for _, u := range s.Upstream {
			if err := visit(byName[u], append(path, s.Name)); err != nil {
				return err
			}
		}
		state[s.Name] = 2
		out = append(out, s)
		return nil
	}
	for _, s := range f.Stages {
		if err := visit(s, nil); err != nil {
			return err
		}
	}
	f.Stages = out
	return nil
}

// producerOf finds the stage whose output is p or contains p.
func producerOf(producer map[string]string, p string) string {
	for q := p; ; q = filepath.Dir(q) {
		if s, ok := producer[q]; ok {
			return s
		}
		if q == filepath.Dir(q) || q == "." {
			return ""
		}
	}
}

func sortedValues(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = m[k]
	}
	return out
}

// Select returns the named stages and everything upstream of them, in
// dependency order; no names means every stage.
func (f *File) Select(names []string) ([]*Stage, error) {
	if len(names) == 0 {
		return f.Stages, nil
	}
	byName := map[string]*Stage{}
	for _, s := range f.Stages {
		byName[s.Name] = s
	}
	want := map[string]bool{}
	var add func(n string) error
	add = func(n string) error {
		s, ok := byName[n]
		if !ok {
			return fmt.Errorf("pipeline %s has no stage %q", f.Path, n)
		}
		if !want[n] {
			want[n] = true
			for _, u := range s.Upstream {
				if err := add(u); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for _, n := range names {
		if err := add(n); err != nil {
			return nil, err
		}
	}
	var out []*Stage
	for _, s := range f.Stages {
		if want[s.Name] {
			out = append(out, s)
		}
	}
	return out, nil
}
