package metrics

import (
	"slices"
	"testing"
)

func TestCanonical(t *testing.T) {
	tests := []struct {
		trainer Trainer
		key     string
		want    Canon
		ok      bool
	}{
		{TrainerVerl, "critic/score/mean", RewardMean, true},
		{TrainerVerl, "actor/kl_loss", KL, true},
		{TrainerVerl, "actor/ppo_kl", KL, true},
		{TrainerVerl, "actor/lr", LearningRate, true},
		{TrainerVerl, "actor/grad_norm", GradNorm, true},
		{TrainerVerl, "training/global_step", OptimizerStep, true},
		{TrainerVerl, "train/num_gen_batches", GenBatches, true},
		{TrainerVerl, "training/n_zero_adv_groups", ZeroVarianceGroups, true},
		{TrainerVerl, "training/n_groups", Groups, true},
		{TrainerVerl, "critic/rewards/mean", "", false},
		{TrainerSkyRL, "reward/avg_raw_reward", RewardMean, true},
		{TrainerSkyRL, "policy/policy_kl", KL, true},
		{TrainerSkyRL, "policy/grad_norm", GradNorm, true},
		{TrainerSkyRL, "policy/policy_lr", LearningRate, true},
		{TrainerSkyRL, "trainer/global_step", OptimizerStep, true},
		{TrainerSkyRL, "reward/num_zero_variance_filtered", ZeroVarianceGroups, true},
		{TrainerTRL, "reward", RewardMean, true},
		{TrainerTRL, "kl", KL, true},
		{TrainerTRL, "learning_rate", LearningRate, true},
		{TrainerTRL, "grad_norm", GradNorm, true},
		{TrainerTRL, "step", OptimizerStep, true},
		{TrainerTRL, "frac_reward_zero_std", ZeroVarianceFraction, true},
		{TrainerTRL, "actor/lr", "", false},
		{TrainerLlamaFactory, "reward", RewardMean, true},
		{TrainerLlamaFactory, "lr", LearningRate, true},
		{TrainerLlamaFactory, "learning_rate", LearningRate, true},
		{TrainerLlamaFactory, "current_steps", OptimizerStep, true},
		{TrainerOpenRLHF, "rollout/reward_mean", RewardMean, true},
		{TrainerOpenRLHF, "reward", RewardMean, true},
		{TrainerOpenRLHF, "kl", KL, true},
		{TrainerOpenRLHF, "actor_lr", LearningRate, true},
		{TrainerOpenRLHF, "actor_grad_norm", GradNorm, true},
		{TrainerOpenRLHF, "critic_lr", "", false},
		{TrainerTRL, "loss", Loss, true},
		{TrainerLlamaFactory, "loss", Loss, true},
		{TrainerTransformers, "train/loss", Loss, true},
		{TrainerTransformers, "train/learning_rate", LearningRate, true},
		{TrainerTransformers, "train/grad_norm", GradNorm, true},
		{TrainerTransformers, "train/reward", RewardMean, true},
		{TrainerTransformers, "train/kl", KL, true},
		{TrainerTransformers, "train/global_step", OptimizerStep, true},
		{TrainerTransformers, "learning_rate", "", false},
		{"unknown", "reward", "", false},
	}
	for _, tt := range tests {
		t.Run(string(tt.trainer)+"/"+tt.key, func(t *testing.T) {
			got, ok := Canonical(tt.trainer, tt.key)
			if got != tt.want || ok != tt.ok {
				t.Errorf("Canonical = %q, %v; want %q, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestKeysPreferenceAndRoundTrip(t *testing.T) {
	if got := Keys(TrainerVerl, KL); !slices.Equal(got, []string{"actor/kl_loss", "actor/ppo_kl"}) {
		t.Errorf("Keys(verl, kl) = %v", got)
	}
	if got := Keys(TrainerSkyRL, GenBatches); got != nil {
		t.Errorf("Keys(skyrl, gen_batches) = %v, want none", got)
	}
	for trainer, rows := range canonTables {
		seen := map[string]bool{}
		for _, r := range rows {
			for _, k := range Keys(trainer, r.canon) {
				if seen[k] {
					t.Errorf("%s: key %q listed twice", trainer, k)
				}
				seen[k] = true
				if c, _ := Canonical(trainer, k); c != r.canon {
					t.Errorf("%s: Canonical(%q) = %q, want %q", trainer, k, c, r.canon)
				}
			}
		}
	}
}
