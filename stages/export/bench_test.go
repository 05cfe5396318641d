package export_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/rlgate/rlgate/ledger/ledgertest"
	"github.com/rlgate/rlgate/stages/dataset"
	"github.com/rlgate/rlgate/stages/export"
	"github.com/rlgate/rlgate/stages/jsonl"
	"github.com/rlgate/rlgate/stages/rollout"
	"github.com/rlgate/rlgate/stages/sqlenv"
	"github.com/rlgate/rlgate/stages/synth"
)

// benchTrajectories writes n synthesised trajectories over the Spider dev
// questions, as rlgate synth writes them (the built-in protocol's prompts;
// one <sql> probe with its observation, then the solution), and returns
// the file and its size.
func benchTrajectories(b *testing.B, n int) (string, int64) {
	b.Helper()
	sp := "../../testdata/spider"
	im, err := dataset.ImportSpider(context.Background(), dataset.SpiderOptions{Dev: sp + "/dev.json", Gold: sp + "/dev_gold.sql",
		Tables: sp + "/tables.json", DBRoot: sp + "/database"})
	if err != nil {
		b.Fatal(err)
	}
	p := rollout.DefaultProtocol()
	obs := p.ObservationMessage(sqlenv.RenderObservation(&sqlenv.Result{Columns: []string{"count(*)"}, Rows: [][]sqlenv.Cell{{sqlenv.Int(4)}}}, nil,
		sqlenv.ObservationOptions{MaxRows: 50, MaxCellRunes: 200}), 5)
	trajs := make([]synth.Trajectory, n)
	for i := range trajs {
		t := &im.Tasks[i%len(im.Tasks)]
		trajs[i] = synth.Trajectory{DBID: t.DBID, ExampleID: t.ID, SampleID: i / len(im.Tasks), System: p.SystemPrompt(t), BasePrompt: p.UserPrompt(t),
			Turns: []synth.Turn{
				{Turn: 0, Think: "Let me count the rows of the table the question is about first.", SQL: "SELECT count(*) FROM singer", Observation: obs},
				{Turn: 1, Think: "Now I can answer the question.", Solution: im.Gold[i%len(im.Gold)].SQL, IsFinal: true},
			}}
	}
	path := filepath.Join(b.TempDir(), synth.TrajectoriesFile)
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := jsonl.Write(f, trajs); err != nil {
		b.Fatal(err)
	}
	fi, _ := f.Stat()
	f.Close()
	return path, fi.Size()
}

// BenchmarkExportSFT100k exports 100,000 trajectories to each SFT format,
// reading, checking, writing, hashing and recording included (issue 16:
// under 5 s).
func BenchmarkExportSFT100k(b *testing.B) {
	n := 100_000
	if s := os.Getenv("RLGATE_BENCH_N"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	from, size := benchTrajectories(b, n)
	for _, format := range export.SFTFormats {
		b.Run(format, func(b *testing.B) {
			l := ledgertest.New(b)
			out := filepath.Join(b.TempDir(), "sft.json")
			b.SetBytes(size)
			cpu0 := benchCPU()
			for i := range b.N {
				s, err := export.ExportSFT(context.Background(), l, export.SFTOptions{From: from, Format: format, Out: out, Run: "bench-" + string(rune('a'+i))})
				if err != nil {
					b.Fatal(err)
				}
				if s.Rows != n {
					b.Fatalf("%d rows", s.Rows)
				}
			}
			// CPU time says more than wall time on a shared machine.
			b.ReportMetric((benchCPU()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
		})
	}
}

// benchCPU is the CPU time (user and system) the process has used.
func benchCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
