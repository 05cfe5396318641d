package train

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlgate/rlgate/lab/refpolicy"
	"github.com/rlgate/rlgate/stages/dataset"
	"github.com/rlgate/rlgate/stages/grade"
	"github.com/rlgate/rlgate/stages/synth"
)

// benchSplit imports Spider dev and splits it as rlgate demo does:
// databases by falling question count go alternately to training and
// evaluation; the training questions alternately to SFT and RL.
func benchSplit(b *testing.B) (sft, rl, eval []Task) {
	ctx := context.Background()
	root := "../../../testdata/spider"
	im, err := dataset.ImportSpider(ctx, dataset.SpiderOptions{Dev: root + "/dev.json", Gold: root + "/dev_gold.sql", Tables: root + "/tables.json", DBRoot: root + "/database"})
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	if err := im.WriteDir(dir, false); err != nil {
		b.Fatal(err)
	}
	all, err := LoadTasks(dir, "")
	if err != nil {
		b.Fatal(err)
	}
	count := map[string]int{}
	for _, t := range all {
		count[t.DBID]++
	}
	var dbs []string
	for db := range count {
		dbs = append(dbs, db)
	}
	slices.SortFunc(dbs, func(x, y string) int {
		if count[x] != count[y] {
			return count[y] - count[x]
		}
		return strings.Compare(x, y)
	})
	evalDB := map[string]bool{}
	for i, db := range dbs {
		evalDB[db] = i%2 == 1
	}
	n := 0
	for _, t := range all {
		switch {
		case evalDB[t.DBID]:
			eval = append(eval, t)
		case n%2 == 0:
			sft, n = append(sft, t), n+1
		default:
			rl, n = append(rl, t), n+1
		}
	}
	return sft, rl, eval
}

// BenchmarkDemoSplit runs the demo's training recipe in process on its
// split of Spider dev (synthesis of 4 samples per SFT question at
// temperature 1 from Base, SFT, GRPO stage 1 from SFT, stage 2 on the
// frontier with KL to stage 1) and reports each checkpoint's greedy
// held-out accuracy (base_acc, ...) and the training seconds.
func BenchmarkDemoSplit(b *testing.B) {
	ctx := context.Background()
	sftT, rlT, evalT := benchSplit(b)
	for b.Loop() {
		env := NewEnv(grade.MetricSpider)
		base := refpolicy.Base(1)
		pol := &refpolicy.Model{W: base}
		var trs []synth.Trajectory
		for i := range sftT {
			for s := range 4 {
				d, _ := env.Play(ctx, pol, &sftT[i], refpolicy.Sampler{Temperature: 1, Seed: 1 + uint64(s), Stream: refpolicy.StreamOf(sftT[i].ID)})
				if r, err := env.Reward(ctx, &sftT[i], d.Turn.Body); err != nil {
					b.Fatal(err)
				} else if r == 1 {
					trs = append(trs, synth.Trajectory{ExampleID: sftT[i].ID, DBID: sftT[i].DBID, SampleID: s, Turns: []synth.Turn{{Solution: d.Turn.Body, IsFinal: true}}})
				}
			}
		}
		t0 := time.Now()
		sft := base.Clone()
		if _, err := SFT(ctx, env, sft, sftT, trs, SFTOptions{Epochs: 3, Batch: 16, LR: 0.05, Decay: 0.01, Seed: 1}, nil); err != nil {
			b.Fatal(err)
		}
		o := GRPOOptions{Steps: 30, Batch: 16, Group: 8, LR: 0.05, ClipLow: 0.2, ClipHigh: 0.28, Decay: 0.01, PPOEpochs: 2, Seed: 1}
		rl1 := sft.Clone()
		if _, err := GRPO(ctx, env, rl1, rlT, o, nil); err != nil {
			b.Fatal(err)
		}
		frontier, err := Frontier(ctx, env, rl1, rlT, o.Group, o.Seed)
		if err != nil {
			b.Fatal(err)
		}
		rl2 := rl1.Clone()
		o.Ref, o.KLCoef = rl1, 0.001
		if _, err := GRPO(ctx, env, rl2, frontier, o, nil); err != nil {
			b.Fatal(err)
		}
		noupdate := base.Clone()
		o.Ref, o.LR = nil, 0
		if _, err := GRPO(ctx, env, noupdate, rlT, o, nil); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(time.Since(t0).Seconds(), "train_s")
		var baseRight []bool
		for _, c := range []struct {
			name string
			w    *refpolicy.Weights
		}{{"base", base}, {"sft", sft}, {"rl1", rl1}, {"rl2", rl2}} {
			right := benchRight(b, env, c.w, evalT)
			k, better, worse := 0, 0, 0
			for i, r := range right {
				switch {
				case r:
					k++
					if baseRight != nil && !baseRight[i] {
						better++
					}
				case baseRight != nil && baseRight[i]:
					worse++
				}
			}
			b.ReportMetric(float64(k)/float64(len(right)), c.name+"_acc")
			if baseRight == nil {
				baseRight = right
				continue
			}
			// the discordant pairs of the gate's McNemar test against Base
			b.ReportMetric(float64(better), c.name+"_b")
			b.ReportMetric(float64(worse), c.name+"_c")
		}
		b.ReportMetric(float64(len(trs)), "sft_examples")
		b.ReportMetric(float64(len(frontier)), "frontier_tasks")
		env.Close()
	}
}

// benchRight says, per task, whether w's greedy answer is right.
func benchRight(b *testing.B, env *Env, w *refpolicy.Weights, ts []Task) []bool {
	pol := &refpolicy.Model{W: w}
	out := make([]bool, len(ts))
	for i := range ts {
		d, _ := env.Play(context.Background(), pol, &ts[i], refpolicy.Sampler{})
		r, err := env.Reward(context.Background(), &ts[i], d.Turn.Body)
		if err != nil {
			b.Fatal(err)
		}
		out[i] = r == 1
	}
	return out
}
