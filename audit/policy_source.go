package audit

import "fmt"

// source returns the text the gate records as p's source: the policy
// file's (Source), or a built-in policy's own.
func (p Policy) source() ([]byte, error) {
	if p.Source != nil {
		return p.Source, nil
	}
	if src, ok := builtinPolicies[p.Name]; ok {
		return src(), nil
	}
	return nil, fmt.Errorf("gate: policy %s has no source text to record (read it with LoadPolicy or ParsePolicy)", p.Name)
}
