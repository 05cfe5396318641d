package runner

import (
	"context"
	"maps"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"sync"
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
// picking the version out of their output (compiled where used, next to
// running the command, rather than at every rlgate start).
var toolProbes = []struct {
	name    string
	argv    []string
	pattern string
}{
	{"python3", []string{"python3", "--version"}, `Python (\S+)`},
	{"cuda", []string{"nvcc", "--version"}, `release ([0-9.]+)`},
	{"nvidia-driver", []string{"nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"}, `(\S+)`},
	{"git", []string{"git", "--version"}, `git version (\S+)`},
}

// probeTimeout bounds each version command; a hung driver must not hang a run.
const probeTimeout = 5 * time.Second

// DescribeHost reports the machine and the versions of the tools found.
// The probes run once per process and PATH (the tools are looked up on
// the process's PATH): a version command can be slow (a pyenv shim runs
// several shells for python3 --version, over half a second of CPU), and a
// process that records several stages (repro, the demo) would otherwise
// pay it for each. A probe cut short by ctx is not kept.
func DescribeHost(ctx context.Context) Host {
	path := os.Getenv("PATH")
	hosts.mu.Lock()
	h, ok := hosts.byPath[path]
	hosts.mu.Unlock()
	if !ok {
		h = describeHost(ctx)
		if ctx.Err() == nil {
			hosts.mu.Lock()
			if hosts.byPath == nil {
				hosts.byPath = map[string]Host{}
			}
			hosts.byPath[path] = h
			hosts.mu.Unlock()
		}
	}
	h.Tools = maps.Clone(h.Tools)
	return h
}

// hosts are the hosts DescribeHost described, by PATH.
var hosts struct {
	mu     sync.Mutex
	byPath map[string]Host
}

// describeHost runs the probes.
func describeHost(ctx context.Context) Host {
	h := Host{OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU(), Tools: map[string]string{"go": runtime.Version()}}
	h.Hostname, _ = os.Hostname()
	for _, p := range toolProbes {
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		out, err := exec.CommandContext(pctx, p.argv[0], p.argv[1:]...).Output()
		cancel()
		if err != nil {
			continue
		}
		if m := regexp.MustCompile(p.pattern).FindStringSubmatch(strings.TrimSpace(string(out))); m != nil {
			h.Tools[p.name] = m[1]
		}
	}
	return h
}
