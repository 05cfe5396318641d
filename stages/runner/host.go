package runner

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"time"
)

// Host is where a run ran and which tools were found there.
type Host struct {
	Hostname string            `json:"hostname"`
	OS       string            `json:"os"`
	Arch     string            `json:"arch"`
	CPUs     int               `json:"cpus"`
	Tools    map[string]string `json:"tools"` // tool -> version, only tools found
}

// toolProbes are the version commands run for Host.Tools, with a pattern
// picking the version out of their output.
var toolProbes = []struct {
	name string
	argv []string
	re   *regexp.Regexp
}{
	{"python3", []string{"python3", "--version"}, regexp.MustCompile(`Python (\S+)`)},
	{"cuda", []string{"nvcc", "--version"}, regexp.MustCompile(`release ([0-9.]+)`)},
	{"nvidia-driver", []string{"nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"}, regexp.MustCompile(`(\S+)`)},
	{"git", []string{"git", "--version"}, regexp.MustCompile(`git version (\S+)`)},
}

// probeTimeout bounds each version command; a hung driver must not hang a run.
const probeTimeout = 5 * time.Second

// DescribeHost reports the machine and the versions of the tools found.
func DescribeHost(ctx context.Context) Host {
	h := Host{OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU(), Tools: map[string]string{"go": runtime.Version()}}
	h.Hostname, _ = os.Hostname()
	for _, p := range toolProbes {
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		out, err := exec.CommandContext(pctx, p.argv[0], p.argv[1:]...).Output()
		cancel()
		if err != nil {
			continue
		}
		if m := p.re.FindStringSubmatch(strings.TrimSpace(string(out))); m != nil {
			h.Tools[p.name] = m[1]
		}
	}
	return h
}
