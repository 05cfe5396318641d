package metrics

// Trainer names a training framework whose metric keys Canonical knows.
type Trainer string

// The trainers with a key table.
const (
	TrainerVerl         Trainer = "verl"
	TrainerSkyRL        Trainer = "skyrl"
	TrainerTRL          Trainer = "trl"
	TrainerLlamaFactory Trainer = "llamafactory"
	TrainerOpenRLHF     Trainer = "openrlhf"
	// TrainerTransformers is the Hugging Face Trainer (and TRL and
	// LLaMA-Factory, which build on it) as its tracker callbacks log it:
	// WandbCallback and SwanLabCallback prefix every key with "train/"
	// (train/loss, train/learning_rate); MLflowCallback does not, and its
	// keys are TRL's.
	TrainerTransformers Trainer = "transformers"
)

// Trainers lists the trainers with a key table, in the order audits look
// through them for a canonical quantity.
var Trainers = []Trainer{TrainerVerl, TrainerSkyRL, TrainerTRL, TrainerLlamaFactory, TrainerOpenRLHF, TrainerTransformers}

// Canon is a trainer-independent name for one of the few quantities the
// audits read. Points keep the trainer's own keys; audits look them up
// through Canonical and Keys.
type Canon string

const (
	// RewardMean is the mean raw (task) reward of a training batch.
	RewardMean Canon = "reward_mean"
	// KL is a KL divergence the trainer reports; see the table for which.
	KL Canon = "kl"
	// LearningRate is the optimizer's learning rate at the step.
	LearningRate Canon = "learning_rate"
	// GradNorm is the gradient norm before clipping.
	GradNorm Canon = "grad_norm"
	// ZeroVarianceGroups counts prompt groups whose rewards were all equal,
	// which carry no GRPO advantage.
	ZeroVarianceGroups Canon = "zero_variance_groups"
	// ZeroVarianceFraction is the fraction of such groups.
	ZeroVarianceFraction Canon = "zero_variance_fraction"
	// Groups counts prompt groups, the denominator for ZeroVarianceGroups.
	Groups Canon = "groups"
	// GenBatches is how many generation batches DAPO's dynamic sampling drew
	// to fill one training batch after dropping zero-variance groups: an
	// indirect zero-variance signal (1 means none were dropped or filling
	// was off).
	GenBatches Canon = "gen_batches"
	// OptimizerStep is the trainer's count of optimizer updates.
	OptimizerStep Canon = "optimizer_step"
	// Loss is the training loss the trainer reports (for GRPO the policy
	// loss); reports draw it, no audit decides on it.
	Loss Canon = "loss"
	// ResponseLength is the mean length, in tokens, of the batch's
	// generated responses; reports draw it beside reward and KL.
	ResponseLength Canon = "response_length"
)

// canonRow lists the keys a trainer logs for one quantity, preferred first.
type canonRow struct {
	canon Canon
	keys  []string
}

// canonTables holds, per trainer, the keys behind each canonical quantity,
// as that trainer's own logger names them. Where two keys measure related
// but different things the preferred one comes first and the comment says
// how they differ.
var canonTables = map[Trainer][]canonRow{
	TrainerVerl: {
		{RewardMean, []string{"critic/score/mean"}}, // raw score; critic/rewards/mean includes KL penalties
		// actor/kl_loss is the KL to the reference policy (use_kl_loss);
		// actor/ppo_kl the KL between the rollout and updated policy,
		// logged always.
		{KL, []string{"actor/kl_loss", "actor/ppo_kl"}},
		{LearningRate, []string{"actor/lr"}},
		{GradNorm, []string{"actor/grad_norm"}},
		{OptimizerStep, []string{"training/global_step"}},
		{ZeroVarianceGroups, []string{"training/n_zero_adv_groups"}}, // Agent Lightning on veRL
		{Groups, []string{"training/n_groups"}},                      // Agent Lightning on veRL
		{GenBatches, []string{"train/num_gen_batches"}},              // DAPO recipe
		{ResponseLength, []string{"response_length/mean"}},
	},
	TrainerSkyRL: {
		{RewardMean, []string{"reward/avg_raw_reward"}},
		{KL, []string{"policy/policy_kl"}},
		{LearningRate, []string{"policy/policy_lr"}},
		{GradNorm, []string{"policy/grad_norm"}},
		{OptimizerStep, []string{"trainer/global_step"}},
		{ZeroVarianceGroups, []string{"reward/num_zero_variance_filtered"}},
	},
	TrainerTRL: {
		{RewardMean, []string{"reward"}},
		{KL, []string{"kl"}}, // logged only when beta > 0
		{LearningRate, []string{"learning_rate"}},
		{GradNorm, []string{"grad_norm"}},
		// TRL's step counts optimizer updates and becomes every point's
		// Step rather than a key; the row records that for audits asking
		// where a trainer keeps its optimizer step.
		{OptimizerStep, []string{"step"}},
		{ZeroVarianceFraction, []string{"frac_reward_zero_std"}}, // GRPOTrainer, recent TRL
		{ResponseLength, []string{"completions/mean_length"}},
		{Loss, []string{"loss"}},
	},
	// LLaMA-Factory's trainer_log.jsonl (LogCallback.on_log) copies a few
	// members of the Trainer's log_history entry under its own names.
	TrainerLlamaFactory: {
		{RewardMean, []string{"reward"}},
		// lr since 2024; releases of 2023 wrote learning_rate.
		{LearningRate, []string{"lr", "learning_rate"}},
		// current_steps is the Trainer's global_step and becomes every
		// point's Step, as TRL's step does.
		{OptimizerStep, []string{"current_steps"}},
		{Loss, []string{"loss"}},
	},
	// OpenRLHF's PPO trainer status dict ("Global step N: {...}").
	TrainerOpenRLHF: {
		// The raw reward over the step's whole rollout batch; reward is its
		// mean over the PPO micro-batches, in every release.
		{RewardMean, []string{"rollout/reward_mean", "reward"}},
		{KL, []string{"kl"}}, // the KL to the reference policy
		{LearningRate, []string{"actor_lr"}},
		{GradNorm, []string{"actor_grad_norm"}},
	},
	// The Trainer's log dict as W&B and SwanLab record it (transformers
	// integration_utils.py rewrite_logs: "train/" before every key that is
	// not an eval_ or test_ metric); TRL's GRPO keys come through the same.
	TrainerTransformers: {
		{RewardMean, []string{"train/reward"}},
		{KL, []string{"train/kl"}},
		{LearningRate, []string{"train/learning_rate"}},
		{GradNorm, []string{"train/grad_norm"}},
		{OptimizerStep, []string{"train/global_step"}},
		{ZeroVarianceFraction, []string{"train/frac_reward_zero_std"}},
		{ResponseLength, []string{"train/completions/mean_length"}},
		{Loss, []string{"train/loss"}},
	},
}

// canonIndex maps trainer and key to the canonical quantity.
var canonIndex = func() map[Trainer]map[string]Canon {
	idx := make(map[Trainer]map[string]Canon, len(canonTables))
	for t, rows := range canonTables {
		m := make(map[string]Canon)
		for _, r := range rows {
			for _, k := range r.keys {
				m[k] = r.canon
			}
		}
		idx[t] = m
	}
	return idx
}()

// Canonical returns the canonical quantity a trainer's key measures.
func Canonical(t Trainer, key string) (Canon, bool) {
	c, ok := canonIndex[t][key]
	return c, ok
}

// Keys returns the trainer's keys for c, preferred first, so that an audit
// can take the first one present in a run.
func Keys(t Trainer, c Canon) []string {
	for _, r := range canonTables[t] {
		if r.canon == c {
			return append([]string(nil), r.keys...)
		}
	}
	return nil
}
