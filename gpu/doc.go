// Package gpu records what GPUs a stage ran on and how it used them, by
// asking nvidia-smi; the numbers back the fixed-budget audit (were compared
// runs given the same compute?) and the GPU-hours a report states.
//
// Every query is the same one:
//
//	nvidia-smi --query-gpu=index,uuid,name,driver_version,memory.total,memory.used,utilization.gpu,power.draw,temperature.gpu --format=csv,noheader,nounits
//
// nvidia-smi is found on PATH. ParseCSV reads its output; a value printed as
// [N/A] or [Not Supported] is absent (a nil pointer), never zero, so a GPU
// whose power draw cannot be read does not lower the mean power.
//
// Inventory runs the query once and returns the devices, or ErrNoGPU.
//
// A Sampler runs it every Interval (5 s by default) until its context ends
// and hands each Sample to a callback that records it. Without nvidia-smi
// the Sampler reports State NoGPU and returns at once: a CPU-only stage is
// not an error. A query that fails mid-run (a driver hiccup, a timeout)
// becomes a Sample carrying the error, and sampling continues.
//
// Summarize condenses samples: the GPUs seen with their identity, peak
// memory per GPU and across GPUs at one moment, mean utilization and power,
// GPU-hours (GPUs seen × time between the first and last sample), and
// busy GPU-hours (utilization integrated over time).
package gpu
