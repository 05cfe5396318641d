package pipeline

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// File is a parsed rlgate.yaml.
type File struct {
	Path   string
	Stages []*Stage // in dependency order
}

// Stage is one stage of a pipeline file. Paths are relative to the file.
type Stage struct {
	Name    string            `yaml:"-"`
	Cmd     Cmd               `yaml:"cmd"`
	Deps    map[string]string `yaml:"deps"`    // input name -> path
	Outs    map[string]string `yaml:"outs"`    // output name -> path
	Params  map[string]string `yaml:"params"`  // recorded and compared; passed as RLGATE_PARAM_<KEY>
	Configs []string          `yaml:"configs"` // config files, hashed in canonical form
	Metrics []string          `yaml:"metrics"` // FILE[:FORMAT]
	Timeout Duration          `yaml:"timeout"`
	GPU     string            `yaml:"gpu"` // auto (default) or off
	// Gate is a gate policy file (relative to the pipeline file), or
	// "paper-grade" for the built-in one, checked once the stage is up to
	// date; stages downstream of a failed gate are not run.
	Gate string `yaml:"gate"`
	// Upstream are the stages whose outputs this stage reads.
	Upstream []string `yaml:"-"`
}

// Cmd is a stage's command: a YAML list is an argv run as is; a string is
// a shell command run by "sh -c", which the file then says plainly.
type Cmd []string

// UnmarshalYAML accepts a string or a list of strings.
func (c *Cmd) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		*c = Cmd{"sh", "-c", n.Value}
		return nil
	case yaml.SequenceNode:
		var argv []string
		if err := n.Decode(&argv); err != nil {
			return err
		}
		*c = argv
		return nil
	}
	return fmt.Errorf("line %d: cmd must be a string (run by sh -c) or a list (argv)", n.Line)
}

// Duration is a time.Duration written as "90m" or "2h".
type Duration time.Duration

// UnmarshalYAML parses a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: timeout %q: %v", n.Line, n.Value, err)
	}
	*d = Duration(v)
	return nil
}

type fileYAML struct {
	Stages yaml.Node `yaml:"stages"`
}

// Load reads and checks a pipeline file: unknown fields are refused, every
// stage needs a cmd, an output path has one producer, and the stages form
// no cycle. Stages come back in dependency order (ties in file order).
func Load(path string) (*File, error) {
	raw, err := os.ReadFile(path)
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
		var s Stage
		if err := decodeStrict(node, &s); err != nil {
			return nil, fmt.Errorf("pipeline %s: stage %q: %w", path, name, err)
		}
		s.Name = name
		if len(s.Cmd) == 0 {
			return nil, fmt.Errorf("pipeline %s: stage %q (line %d): no cmd", path, name, node.Line)
		}
		switch s.GPU {
		case "", "auto", "off":
		default:
			return nil, fmt.Errorf("pipeline %s: stage %q: gpu %q: want auto or off", path, name, s.GPU)
		}
		f.Stages = append(f.Stages, &s)
	}
	if err := f.order(); err != nil {
		return nil, fmt.Errorf("pipeline %s: %w", path, err)
	}
	return f, nil
}

// decodeStrict decodes a node refusing unknown fields (yaml.Node.Decode
// does not apply the decoder's KnownFields).
func decodeStrict(n *yaml.Node, v any) error {
	b, err := yaml.Marshal(n)
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("near line %d: %w", n.Line, err)
	}
	return nil
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
