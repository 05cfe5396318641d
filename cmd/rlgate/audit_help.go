package main

import "github.com/rlgate/rlgate/audit"

// ledgerAuditHelp says what each ledger audit checks, for its help text.
var ledgerAuditHelp = map[string][2]string{
	audit.AuditGold: {"check that no gold reached the policy",
		"  no-gold-in-prompts  no system or user message of any recorded request body\n" +
			"                      (prompts, observations, correction prompts) holds the\n" +
			"                      task's gold SQL, normalised (case, white space, quoting,\n" +
			"                      aliases), or a fragment of it --gold-substring long;\n" +
			"  no-gold-fields      the tasks file the rollout read carries no gold field;\n" +
			"  gold-mutation       with --mutate K: K sampled tasks, every sample, re-played\n" +
			"                      beside a mutated gold (against the recorded replies, or\n" +
			"                      --mutate-endpoint at temperature 0) send requests\n" +
			"                      byte-identical to the recorded ones; grades may differ.\n" +
			"The gold is the file beside the tasks, verified against the digest the\n" +
			"grading recorded.\n"},
	audit.AuditSplit: {"check that training never saw the evaluation tasks",
		"  split-task-ids, split-questions (exact once normalised, or bigram Jaccard\n" +
			"  >= --near-duplicate), split-databases (with --split-by-database): the\n" +
			"  imported datasets the --train runs read (--in NAME=DIR) against the tasks\n" +
			"  the --runs evaluated; sft-rl-disjoint: the sft and rl runs' data share no\n" +
			"  task id. An input that rlgate synth or rlgate export wrote (the lineage\n" +
			"  rlgate run records) counts as the task ids that run recorded, with the\n" +
			"  exclusion an export rl --exclude recorded, instead of a whole dataset.\n"},
	audit.AuditBudget: {"check that compared evaluations were held to one budget",
		"  same-dataset, same-task-set, same-protocol, same-grading: the --runs share\n" +
			"  tasks and gold digests, the digest of every database and the SQLite version\n" +
			"  their gradings recorded (database_check; another SQLite fails: it can change\n" +
			"  verdicts), task set, protocol digest (turns, tokens, sampling, SQL timeout\n" +
			"  and row caps) and metric; every difference is listed side by side, and a\n" +
			"  grading on databases that differ from the import (--allow-db-mismatch)\n" +
			"  fails; same-episodes: no grading counted unfinished episodes wrong (eval\n" +
			"  --allow-incomplete); within-budget: each rollout finished (else its\n" +
			"  unfinished episodes are listed) and no episode spent more turns or SQL\n" +
			"  executions than its protocol allows.\n"},
	audit.AuditReward: {"check that the reward signal is alive",
		"  databases-present, gold-self-grade: for the dataset each --train run read\n" +
			"  (graded on its db_root parameter when it has one) and each evaluation's,\n" +
			"  every database exists, has the digest the ledger recorded (the import's, or\n" +
			"  the grading's database_check), and gold graded against itself scores 1 on\n" +
			"  at least 99% of a sample (a wrong database path fails here); a changed\n" +
			"  database fails with both digests named; execution-reward: the\n" +
			"  rl run's logged reward is not constantly 0; kl-growth: its KL in the last\n" +
			"  tenth of training over the first tenth stays under --max-kl-growth;\n" +
			"  zero-variance and sql-timeouts are reported.\n"},
	audit.AuditTraining: {"check that each training run trained",
		"  run-ok: the stage ended ok (else its status, exit code and reason);\n" +
			"  metric-findings: run.end records no problem with the metrics files\n" +
			"  (metric_findings: a parse error, a file never written, a key twice in a\n" +
			"  step); optimizer-steps: at least one optimizer step is\n" +
			"  logged; learning-rate: lr > 0 for a trained run and lr = 0 at every step\n" +
			"  for the noupdate run (from the metrics, else an lr parameter).\n"},
	audit.AuditIdentity: {"check that the evaluated models are the trained ones",
		"  evaluated-is-trained / evaluated-is-base: the model identity each\n" +
			"  evaluation recorded (rlgate eval --model-identity) is the output of the\n" +
			"  --train run with its label (base: the rl run's input); noupdate-identical:\n" +
			"  the noupdate run wrote its input back in every tensor digest;\n" +
			"  trained-changed: the other runs changed their input. Digests only: the\n" +
			"  element rule needs the bytes (rlgate audit weights).\n"},
}
