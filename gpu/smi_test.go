package gpu

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	twoGPUs = "0, GPU-11111111-aaaa, NVIDIA H100 80GB HBM3, 550.54.15, 81559, 40123, 97, 650.25, 61\n" +
		"1, GPU-22222222-bbbb, NVIDIA H100 80GB HBM3, 550.54.15, 81559, 512, 0, 70.10, 35\n"
	powerNA = "0, GPU-33333333-cccc, NVIDIA A10G, 535.104.05, 23028, 100, 3, [N/A], 30\n"
)

// fakeSMI puts an nvidia-smi script first on PATH. On its n-th run it prints
// outputs[n] (the last one once they run out); an output "exit N: msg"
// prints msg to stderr and exits with N, and "hang" sleeps for a minute.
// Arguments other than the expected query make it fail, so tests also check
// the query.
func fakeSMI(t *testing.T, outputs ...string) {
	t.Helper()
	dir := t.TempDir()
	var script strings.Builder
	script.WriteString("#!/bin/sh\n")
	script.WriteString(`[ "$1 $2" = "` + strings.Join(smiArgs, " ") + `" ] || { echo "bad args: $*" >&2; exit 2; }` + "\n")
	script.WriteString(`n=$(cat "` + dir + `/count" 2>/dev/null || echo 0)` + "\n")
	script.WriteString(`echo $((n + 1)) > "` + dir + `/count"` + "\n")
	script.WriteString("case $n in\n")
	for i, out := range outputs {
		label := "*"
		if i < len(outputs)-1 {
			label = string(rune('0' + i))
		}
		script.WriteString(label + ")\n")
		if out == "hang" {
			script.WriteString("exec sleep 60\n;;\n")
			continue
		}
		if code, msg, ok := strings.Cut(strings.TrimPrefix(out, "exit "), ":"); strings.HasPrefix(out, "exit ") && ok {
			script.WriteString("cat >&2 <<'END'\n" + strings.TrimSpace(msg) + "\nEND\nexit " + code + "\n;;\n")
			continue
		}
		script.WriteString("cat <<'END'\n" + out + "END\n;;\n")
	}
	script.WriteString("esac\n")
	if err := os.WriteFile(filepath.Join(dir, smiCommand), []byte(script.String()), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// noSMI leaves PATH with nothing on it.
func noSMI(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
}

func f(v float64) *float64 { return &v }

func TestParseCSV(t *testing.T) {
	tests := []struct {
		name string
		out  string
		want []Reading
		err  bool
	}{
		{
			name: "two GPUs",
			out:  twoGPUs,
			want: []Reading{
				{Device{0, "GPU-11111111-aaaa", "NVIDIA H100 80GB HBM3", "550.54.15", f(81559)}, f(40123), f(97), f(650.25), f(61)},
				{Device{1, "GPU-22222222-bbbb", "NVIDIA H100 80GB HBM3", "550.54.15", f(81559)}, f(512), f(0), f(70.10), f(35)},
			},
		},
		{
			name: "power not available",
			out:  powerNA,
			want: []Reading{{Device{0, "GPU-33333333-cccc", "NVIDIA A10G", "535.104.05", f(23028)}, f(100), f(3), nil, f(30)}},
		},
		{
			name: "not supported and blank lines",
			out:  "\n0, [N/A], Tesla T4, 470.1, 15360, [Not Supported], [Not Supported], [Unknown Error], N/A\n\n",
			want: []Reading{{Device: Device{Index: 0, Name: "Tesla T4", Driver: "470.1", MemoryTotalMiB: f(15360)}}},
		},
		{name: "empty", out: "", want: nil},
		{name: "wrong field count", out: "0, GPU-1, T4\n", err: true},
		{name: "index not a number", out: "x, a, b, c, 1, 2, 3, 4, 5\n", err: true},
		{name: "value not a number", out: "0, a, b, c, 1, 2 MiB, 3, 4, 5\n", err: true},
		{name: "an error message", out: "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n", err: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseCSV([]byte(tt.out))
			if tt.err {
				if !errors.Is(err, ErrBadOutput) || !strings.Contains(err.Error(), "line ") {
					t.Fatalf("err = %v, want ErrBadOutput naming the line", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d readings, want %d", len(got), len(tt.want))
			}
			for i := range got {
				if g, w := asJSON(t, got[i]), asJSON(t, tt.want[i]); g != w {
					t.Errorf("reading %d = %s, want %s", i, g, w)
				}
			}
		})
	}
}

// asJSON renders a reading with its optional values dereferenced, for
// comparing and printing.
func asJSON(t *testing.T, r Reading) string {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestInventory(t *testing.T) {
	t.Run("two GPUs", func(t *testing.T) {
		fakeSMI(t, twoGPUs)
		ds, err := Inventory(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) != 2 || ds[1].UUID != "GPU-22222222-bbbb" || *ds[0].MemoryTotalMiB != 81559 {
			t.Errorf("devices = %+v", ds)
		}
	})
	t.Run("no nvidia-smi", func(t *testing.T) {
		noSMI(t)
		if _, err := Inventory(context.Background()); !errors.Is(err, ErrNoGPU) {
			t.Errorf("err = %v, want ErrNoGPU", err)
		}
	})
	t.Run("no device", func(t *testing.T) {
		fakeSMI(t, "")
		if _, err := Inventory(context.Background()); !errors.Is(err, ErrNoGPU) {
			t.Errorf("err = %v, want ErrNoGPU", err)
		}
	})
	t.Run("failing", func(t *testing.T) {
		fakeSMI(t, "exit 9: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.")
		_, err := Inventory(context.Background())
		if err == nil || errors.Is(err, ErrNoGPU) || !strings.Contains(err.Error(), "couldn't communicate") {
			t.Errorf("err = %v, want the failure with nvidia-smi's reason", err)
		}
	})
}
