package train

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"

	"github.com/rlgate/rlgate/lab/refpolicy"
	"github.com/rlgate/rlgate/stages/jsonl"
	"github.com/rlgate/rlgate/stages/synth"
)

// SFTOptions configure an SFT run.
type SFTOptions struct {
	Epochs int
	Batch  int
	LR     float64
	Decay  float64
	Seed   uint64
}

// SFTSummary is what an SFT run did.
type SFTSummary struct {
	Trajectories int     `json:"trajectories"`
	Examples     int     `json:"examples"`
	Unmatched    int     `json:"unmatched"` // final SQL no choice of the policy renders
	Steps        int     `json:"steps"`
	LossFirst    float64 `json:"loss_first"`
	LossLast     float64 `json:"loss_last"`
}

type example struct {
	sit     *refpolicy.Situation
	targets refpolicy.Targets
}

// ReadTrajectories reads trajectories.jsonl (synth.Trajectory records).
func ReadTrajectories(path string) ([]synth.Trajectory, error) {
	trs, err := jsonl.Read[synth.Trajectory](path, nil)
	if err != nil {
		return nil, fmt.Errorf("read trajectories %w", err)
	}
	return trs, nil
}

// SFT trains w in place on trajectories: each one's example is its task's
// situation (prompt and value probe, as the policy sees them) and its
// target is every choice whose SQL equals the trajectory's final SQL,
// normalised; the loss is −log of their probability, per slot. A
// trajectory whose task is not in ts is an error; one whose final SQL no
// choice renders is counted and skipped. Minibatches of Batch examples in
// an order drawn from Seed, AdamW, cosine learning rate; every step's
// metrics (train/loss, actor/lr, training/global_step) go to metrics.
func SFT(ctx context.Context, env *Env, w *refpolicy.Weights, ts []Task, trs []synth.Trajectory, o SFTOptions, metrics io.Writer) (*SFTSummary, error) {
	byID := make(map[string]*Task, len(ts))
	for i := range ts {
		byID[ts[i].ID] = &ts[i]
	}
	sum := &SFTSummary{Trajectories: len(trs)}
	var exs []example
	for i, tr := range trs {
		t, ok := byID[tr.ExampleID]
		if !ok {
			return nil, fmt.Errorf("sft: trajectory %d: example %s is not among the tasks. Try: --tasks naming the import the trajectories were sampled from", i+1, tr.ExampleID)
		}
		sit := env.Situation(ctx, t)
		tg, ok := sit.Match(tr.FinalSQL())
		if !ok {
			sum.Unmatched++
			continue
		}
		exs = append(exs, example{sit, tg})
	}
	sum.Examples = len(exs)
	if len(exs) == 0 {
		return nil, fmt.Errorf("sft: none of %d trajectories has a final SQL the policy can express", len(trs))
	}
	if o.Batch < 1 {
		o.Batch = 32
	}
	perEpoch := (len(exs) + o.Batch - 1) / o.Batch
	total := perEpoch * o.Epochs
	pol := &refpolicy.Model{W: w}
	opt := newAdamW(o.Decay)
	mw := metricsWriter{metrics}
	rng := rand.New(rand.NewPCG(o.Seed, 0x5f7))
	step := 0
	for range o.Epochs {
		order := rng.Perm(len(exs))
		for b := 0; b < len(order); b += o.Batch {
			step++
			idx := order[b:min(b+o.Batch, len(order))]
			grad := refpolicy.NewWeights()
			var loss float64
			n := float64(len(idx))
			for _, i := range idx {
				// descend on −log p: add −∇ log p / n
				loss -= pol.MarginalLogProb(exs[i].sit, exs[i].targets, grad, -1/n) / n
			}
			lr := cosineLR(o.LR, step, total)
			norm := opt.step(w, grad, lr)
			if err := mw.write(step, map[string]float64{"training/global_step": float64(step), "train/loss": loss, "actor/lr": lr, "actor/grad_norm": norm}); err != nil {
				return nil, fmt.Errorf("sft: %w", err)
			}
			if step == 1 {
				sum.LossFirst = loss
			}
			sum.LossLast = loss
		}
	}
	sum.Steps = step
	return sum, nil
}

// Frontier returns the tasks at the edge of what w can do: those it
// answers rightly in some but not all of its greedy play and group
// samples at temperature 1. Tasks it always solves teach nothing more and
// tasks it never solves give GRPO groups without reward variance; the
// frontier is a curriculum stage's data. Sampling is seeded by seed.
func Frontier(ctx context.Context, env *Env, w *refpolicy.Weights, ts []Task, group int, seed uint64) ([]Task, error) {
	pol := &refpolicy.Model{W: w}
	var out []Task
	for i := range ts {
		t := &ts[i]
		right := 0
		for g := -1; g < group; g++ {
			s := refpolicy.Sampler{}
			if g >= 0 {
				s = refpolicy.Sampler{Temperature: 1, Seed: seed, Stream: stream(0, t.ID, g)}
			}
			d, _ := env.Play(ctx, pol, t, s)
			ok, err := env.Correct(ctx, t, d.Turn.Body)
			if err != nil {
				return nil, err
			}
			if ok {
				right++
			}
		}
		if right > 0 && right <= group {
			out = append(out, *t)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("frontier: the checkpoint answers each of the %d tasks always or never rightly in %d plays; nothing is left to train on", len(ts), group+1)
	}
	return out, nil
}

// Accuracy plays every task greedily (temperature 0) in process and
// returns the share whose final SQL the grader calls correct.
func Accuracy(ctx context.Context, env *Env, w *refpolicy.Weights, ts []Task) (float64, error) {
	pol := &refpolicy.Model{W: w}
	ok := 0
	for i := range ts {
		d, _ := env.Play(ctx, pol, &ts[i], refpolicy.Sampler{})
		right, err := env.Correct(ctx, &ts[i], d.Turn.Body)
		if err != nil {
			return 0, err
		}
		if right {
			ok++
		}
	}
	return float64(ok) / float64(max(len(ts), 1)), nil
}
