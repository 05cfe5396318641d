package pipeline

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPipelineDocKeys: docs/PIPELINE.md's table of keys documents every
// key the parser accepts (stages, and each of stageKeys), and no other.
func TestPipelineDocKeys(t *testing.T) {
	raw, err := os.ReadFile("../../docs/PIPELINE.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(raw), "\n## The file\n")
	section, _, _ = strings.Cut(section, "\n## ")
	var got []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\| ").FindAllStringSubmatch(section, -1) {
		got = append(got, m[1])
	}
	want := []string{"stages"}
	for _, k := range stageKeys {
		want = append(want, k.key)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("keys documented in docs/PIPELINE.md (-parser +doc):\n%s", diff)
	}
}
