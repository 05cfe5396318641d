"""Builds the LLaMA-Factory, SkyRL and OpenRLHF log fixtures by following
each trainer's writer code (see SOURCES.md for the files and commits):
the same dict building, json.dumps / pprint.pformat / repr, and the same
log line format. Run with Python 3 from this directory; it needs nothing
beyond the standard library and rewrites the three files byte for byte,
with the points each should give (*.expected.json), taken from the dicts
before they were formatted.
"""
import json
import pprint

# --- LLaMA-Factory: src/llamafactory/train/callbacks.py, LogCallback.on_log
# logs = dict(current_steps, total_steps, loss, eval_loss, predict_loss,
# reward, accuracy, lr, epoch, percentage, elapsed_time, remaining_time),
# then throughput and total_tokens when input tokens are counted, then the
# None values dropped; _write_log appends json.dumps(logs) + "\n".
lf, lf_want = [], []
for steps, loss, lr, epoch, elapsed, remaining, tokens in [
    (10, 1.3821, 9.938441702975689e-06, 0.08, "0:01:02", "0:11:47", 409600),
    (20, 1.1043, 9.45503262094184e-06, 0.16, "0:02:03", "0:10:31", 819200),
    (30, 0.9712, 8.535533905932739e-06, 0.24, "0:03:05", "0:09:14", 1228800),
]:
    logs = dict(current_steps=steps, total_steps=125, loss=loss, eval_loss=None, predict_loss=None,
                reward=None, accuracy=None, lr=lr, epoch=epoch,
                percentage=round(steps / 125 * 100, 2), elapsed_time=elapsed, remaining_time=remaining)
    logs["throughput"] = round(tokens / (steps * 6.15), 2)
    logs["total_tokens"] = tokens
    logs = {k: v for k, v in logs.items() if v is not None}
    lf.append(json.dumps(logs) + "\n")
    lf_want.append(logs)
# An evaluation step (eval_strategy=steps) logs eval_loss instead of loss.
logs = dict(current_steps=30, total_steps=125, loss=None, eval_loss=0.9958, predict_loss=None, reward=None,
            accuracy=None, lr=None, epoch=0.24, percentage=24.0, elapsed_time="0:03:21", remaining_time="0:10:36")
logs = {k: v for k, v in logs.items() if v is not None}
lf.append(json.dumps(logs) + "\n")
lf_want.append(logs)
with open("llamafactory-trainer_log.jsonl", "w") as f:
    f.writelines(lf)


def write_expected(path, records):
    """Writes the points a reader should return, [step, key, value] in file
    order, from the dicts before any formatting: numbers only."""
    points = [[step, k, v] for step, rec in records for k, v in rec.items()
              if isinstance(v, (int, float)) and not isinstance(v, bool)]
    with open(path, "w") as f:
        f.write("[\n" + ",\n".join(json.dumps(p) for p in points) + "\n]\n")


write_expected("llamafactory-trainer_log.expected.json",
               [(r["current_steps"], {k: v for k, v in r.items() if k != "current_steps"}) for r in lf_want])


# --- SkyRL: skyrl/train/utils/tracking.py, ConsoleLogger.log:
# logger.info(f"Step {step}: \n{pprint.pformat(stringify_floats(data))}")
# with the loguru format of skyrl/train/utils/utils.py (colorize=True) and
# Ray's "(skyrl_entrypoint pid=N) " before every line of the task's output.
def stringify_floats(obj):
    if isinstance(obj, float):
        return f"{obj:.4f}"
    if isinstance(obj, dict):
        return {k: stringify_floats(v) for k, v in obj.items()}
    return obj


def loguru(time, name, function, line, message):
    return (f"\x1b[32m{time}\x1b[0m | \x1b[1m\x1b[32mINFO    \x1b[0m | "
            f"\x1b[36m{name}\x1b[0m:\x1b[36m{function}\x1b[0m:\x1b[36m{line}\x1b[0m - "
            f"\x1b[1m\x1b[32m{message}\x1b[0m")


ray = "(skyrl_entrypoint pid=2231) "
out, skyrl_want = [], []
for step, (reward, kl, grad, loss) in enumerate([(0.3125, 0.0012, 0.4187, 0.0213), (0.40625, 0.00183, 0.39, -0.0107)], 1):
    data = {
        "generate/avg_num_tokens": 412.5 + step,
        "policy/policy_loss": loss,
        "policy/policy_kl": kl,
        "policy/grad_norm": grad,
        "policy/policy_lr": 1e-06,
        "reward/avg_raw_reward": reward,
        "reward/avg_pass_at_5": 0.5,
        "reward/num_zero_variance_filtered": 3,
        "trainer/epoch": 0,
        "trainer/global_step": step,
        "timing/generate": 41.8713 + step,
        "timing/policy_train": 17.25,
    }
    msg = f"Step {step}: \n{pprint.pformat(stringify_floats(data))}"
    # pprint sorts the keys; the console keeps four decimals of a float;
    # rlgate skips a learning rate shown as 0.0000 rather than record 0.
    shown = {k: float(stringify_floats(data[k])) if isinstance(data[k], float) else data[k] for k in sorted(data)}
    skyrl_want.append((step, {k: v for k, v in shown.items() if not (k == "policy/policy_lr" and v == 0)}))
    text = loguru(f"2026-08-21 18:1{step}:02.125", "skyrl.train.utils.tracking", "log", 189, msg)
    out.append(ray + "Started a local Ray instance.\n" if step == 1 else "")
    out.extend(ray + l + "\n" for l in text.split("\n"))
with open("skyrl-console.log", "w") as f:
    f.writelines(out)
write_expected("skyrl-console.expected.json", skyrl_want)


# --- OpenRLHF: openrlhf/trainer/ppo_trainer.py, PPOTrainer.fit:
# logger.info(f"Sample: {sample0}") in train_step, then
# logger.info(f"✨ Global step {global_step}: {log_status}") with the format
# "%(levelname)s %(asctime)s %(filename)s:%(lineno)d] %(message)s" of
# openrlhf/utils/logging_utils.py; PPOTrainer is a Ray actor.
ray = "(PPOTrainer pid=4121) "
out, openrlhf_want = [], []
for global_step, (reward, kl, lr) in enumerate([(0.21875, 0.0, 5e-07), (0.28125, 0.000731, 1e-06)], 1):
    out.append(ray + f"INFO 08-13 19:2{global_step}:40 ppo_trainer.py:221] Sample: ['SELECT count(*) FROM singer', {reward}]\n")
    status = {
        "policy_loss": -0.0132 * global_step,
        "actor_lr": lr,
        "actor_grad_norm": 0.2871,
        "kl": kl,
        "reward": reward,
        "return": reward,
        "response_length": 187.5,
        "total_length": 1412.25,
        "timing/make_experience": 12.03,
        "timing/ppo_train": 30.5,
        "timing/broadcast": 2.75,
        "rollout/reward_mean": reward,
        "rollout/reward_std": 0.4133986,
        "rollout/response_length_mean": 187.5,
        "rollout/truncated_rate": 0.0,
        "rollout/num_samples": 256.0,
        "timing/generation": 44.5,
    }
    status["timing/step_total"] = sum(v for k, v in status.items() if k.startswith("timing/"))
    openrlhf_want.append((global_step, status))
    out.append(ray + f"INFO 08-13 19:2{global_step}:41 ppo_trainer.py:547] \u2728 Global step {global_step}: {status}\n")
with open("openrlhf-console.log", "w", encoding="utf-8") as f:
    f.writelines(out)
write_expected("openrlhf-console.expected.json", openrlhf_want)
