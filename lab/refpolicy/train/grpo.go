package train

import (
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"strconv"

	"github.com/rlgate/rlgate/lab/refpolicy"
	"golang.org/x/sync/errgroup"
)

// GRPOOptions configure a GRPO run.
type GRPOOptions struct {
	Steps     int     // optimizer steps (batches)
	Batch     int     // tasks per batch
	Group     int     // samples per task (G)
	LR        float64 // peak learning rate of the cosine schedule; 0: the No-update control
	ClipLow   float64 // ratio clip below: 1 − ClipLow (DAPO: 0.2)
	ClipHigh  float64 // ratio clip above: 1 + ClipHigh (DAPO: 0.28)
	Ref       *refpolicy.Weights
	KLCoef    float64 // weight of KL(π‖Ref), with Ref
	Decay     float64 // AdamW weight decay
	PPOEpochs int     // updates per batch; the first is on-policy
	Seed      uint64
}

// GRPOSummary is what a GRPO run did.
type GRPOSummary struct {
	Steps          int     `json:"steps"`
	Episodes       int     `json:"episodes"`
	Groups         int     `json:"groups"`
	ZeroAdvGroups  int     `json:"zero_adv_groups"` // dropped: every sample had the same reward
	MeanRewardHead float64 `json:"mean_reward_first"`
	MeanRewardTail float64 `json:"mean_reward_last"`
}

type sample struct {
	sit    *refpolicy.Situation
	choice refpolicy.Choice
	reward float64
	adv    float64
	oldLP  float64
	tokens int
}

// GRPO trains w in place on ts: per step, Batch tasks (in an order drawn
// from Seed, epoch after epoch) are played Group times each in process at
// temperature 1; each final SQL is rewarded (env.Reward: execution match,
// or the Soft-F1 of an env grading under bird-softf1);
// advantages are normalised within each task's group; groups whose
// rewards are all equal carry no signal and are dropped and counted
// (DAPO's dynamic sampling); the clipped surrogate (ratio clipped to
// [1−ClipLow, 1+ClipHigh]) plus KLCoef·KL(π‖Ref) is minimised with AdamW
// under a cosine learning rate, PPOEpochs times per batch. The gradient
// of an episode is that of its final choice's log-probability. Every
// step's veRL metrics go to metrics. The same inputs and Seed give the
// same weights, bit for bit.
func GRPO(ctx context.Context, env *Env, w *refpolicy.Weights, ts []Task, o GRPOOptions, metrics io.Writer) (*GRPOSummary, error) {
	if len(ts) == 0 {
		return nil, fmt.Errorf("grpo: no tasks")
	}
	if o.PPOEpochs < 1 {
		o.PPOEpochs = 1
	}
	pol := &refpolicy.Model{W: w}
	var ref *refpolicy.Model
	if o.Ref != nil {
		ref = &refpolicy.Model{W: o.Ref}
	}
	opt := newAdamW(o.Decay)
	mw := metricsWriter{metrics}
	rng := rand.New(rand.NewPCG(o.Seed, 0x6770))
	order := rng.Perm(len(ts))
	next := 0
	sum := &GRPOSummary{}
	for step := 1; step <= o.Steps; step++ {
		batch := make([]*Task, o.Batch)
		for i := range batch {
			if next == len(order) {
				order, next = rng.Perm(len(ts)), 0
			}
			batch[i] = &ts[order[next]]
			next++
		}
		samples := make([]sample, o.Batch*o.Group)
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(runtime.GOMAXPROCS(0))
		for i := range samples {
			t := batch[i/o.Group]
			g.Go(func() error {
				d, tokens := env.Play(gctx, pol, t, refpolicy.Sampler{Temperature: 1, Seed: o.Seed, Stream: stream(step, t.ID, i%o.Group)})
				r, err := env.Reward(gctx, t, d.Turn.Body)
				if err != nil {
					return err
				}
				samples[i] = sample{sit: d.Situation, choice: d.Choice, reward: r, tokens: tokens}
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			return nil, fmt.Errorf("grpo step %d: %w", step, err)
		}
		var kept []*sample
		zero := 0
		var score, length float64
		for gi := 0; gi < o.Batch; gi++ {
			grp := samples[gi*o.Group : (gi+1)*o.Group]
			var mean, sq float64
			for _, s := range grp {
				mean += s.reward
				score += s.reward
				length += float64(s.tokens)
			}
			mean /= float64(len(grp))
			for _, s := range grp {
				sq += (s.reward - mean) * (s.reward - mean)
			}
			std := math.Sqrt(sq / float64(len(grp)))
			if std == 0 {
				zero++
				continue
			}
			for i := range grp {
				grp[i].adv = (grp[i].reward - mean) / (std + 1e-6)
				kept = append(kept, &grp[i])
			}
		}
		for _, s := range kept {
			s.oldLP = pol.LogProb(s.sit, s.choice, nil, 0)
		}
		old := &refpolicy.Model{W: w.Clone()}
		// KL(π‖π_ref) of every sample of the batch, before the update:
		// actor/kl_loss per response token as veRL's token-mean is (a
		// reply is a function of the slot choices, so the episode's KL is
		// the choices' KL, spread over its tokens), and per shown slot.
		var klLoss, klSlot float64
		if ref != nil {
			for _, s := range samples {
				kl := pol.KL(ref, s.sit, s.choice, nil, 0)
				klLoss += kl / float64(max(s.tokens, 1)) / float64(len(samples))
				klSlot += kl / float64(s.sit.Shown(s.choice)) / float64(len(samples))
			}
		}
		lr := cosineLR(o.LR, step, o.Steps)
		var pgLoss, clipFrac, ppoKL, gradNorm, entropy float64
		for epoch := 0; epoch < o.PPOEpochs; epoch++ {
			grad := refpolicy.NewWeights()
			pgLoss, clipFrac, entropy = 0, 0, 0
			n := float64(max(len(kept), 1))
			for _, s := range kept {
				lp := pol.LogProb(s.sit, s.choice, nil, 0)
				ratio := math.Exp(lp - s.oldLP)
				clipped := ratio
				if s.adv > 0 {
					clipped = min(ratio, 1+o.ClipHigh)
				} else {
					clipped = max(ratio, 1-o.ClipLow)
				}
				pgLoss += -min(ratio*s.adv, clipped*s.adv) / n
				entropy += pol.Entropy(s.sit, s.choice) / n
				if clipped != ratio {
					clipFrac += 1 / n
				} else {
					pol.LogProb(s.sit, s.choice, grad, -s.adv*ratio/n)
				}
				if ref != nil {
					pol.KL(ref, s.sit, s.choice, grad, o.KLCoef/n)
				}
			}
			if len(kept) > 0 {
				gradNorm = opt.step(w, grad, lr)
			}
		}
		// KL(π_old‖π_new) over the kept samples, exact rather than veRL's
		// sampled estimate, so never negative: actor/ppo_kl per response
		// token, and per shown slot.
		var ppoSlot float64
		for _, s := range kept {
			kl := old.KL(pol, s.sit, s.choice, nil, 0)
			ppoKL += kl / float64(max(s.tokens, 1)) / float64(len(kept))
			ppoSlot += kl / float64(s.sit.Shown(s.choice)) / float64(len(kept))
		}
		data := map[string]float64{
			"training/global_step":       float64(step),
			"critic/score/mean":          score / float64(len(samples)),
			"critic/rewards/mean":        score / float64(len(samples)),
			"actor/pg_loss":              pgLoss,
			"actor/pg_clipfrac":          clipFrac,
			"actor/ppo_kl":               ppoKL,
			"actor/entropy":              entropy,
			"actor/grad_norm":            gradNorm,
			"actor/lr":                   lr,
			"response_length/mean":       length / float64(len(samples)),
			"training/n_zero_adv_groups": float64(zero),
			"training/n_groups":          float64(o.Batch),
			"refpolicy/ppo_kl_per_slot":  ppoSlot,
		}
		if ref != nil {
			data["actor/kl_loss"] = klLoss
			data["refpolicy/kl_per_slot"] = klSlot
			data["actor/kl_coef"] = o.KLCoef
		}
		if err := mw.write(step, data); err != nil {
			return nil, fmt.Errorf("grpo: %w", err)
		}
		sum.Steps = step
		sum.Episodes += len(samples)
		sum.Groups += o.Batch
		sum.ZeroAdvGroups += zero
		if step == 1 {
			sum.MeanRewardHead = data["critic/score/mean"]
		}
		sum.MeanRewardTail = data["critic/score/mean"]
	}
	return sum, nil
}

// stream names the sampling stream of sample g of task id at step.
func stream(step int, id string, g int) uint64 {
	h := fnv.New64a()
	h.Write([]byte(strconv.Itoa(step) + "/" + id + "/" + strconv.Itoa(g)))
	return h.Sum64()
}
