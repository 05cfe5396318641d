package train

import (
	"encoding/json"
	"fmt"
	"io"
	"math"

	"github.com/rlgate/rlgate/lab/refpolicy"
)

// adamW is AdamW (decoupled weight decay) over every weight tensor.
type adamW struct {
	beta1, beta2, eps, decay float64
	m, v                     [refpolicy.NumSlots][]float64
	t                        int
}

func newAdamW(decay float64) *adamW {
	a := &adamW{beta1: 0.9, beta2: 0.999, eps: 1e-8, decay: decay}
	for s := range a.m {
		a.m[s] = make([]float64, refpolicy.Dim)
		a.v[s] = make([]float64, refpolicy.Dim)
	}
	return a
}

// step descends along g with learning rate lr and returns g's L2 norm.
// With lr = 0 every weight keeps its exact bits.
func (a *adamW) step(w, g *refpolicy.Weights, lr float64) float64 {
	a.t++
	c1 := 1 - math.Pow(a.beta1, float64(a.t))
	c2 := 1 - math.Pow(a.beta2, float64(a.t))
	var norm float64
	for s := range w {
		for i, gi := range g[s] {
			x := float64(gi)
			norm += x * x
			a.m[s][i] = a.beta1*a.m[s][i] + (1-a.beta1)*x
			a.v[s][i] = a.beta2*a.v[s][i] + (1-a.beta2)*x*x
			upd := a.m[s][i]/c1/(math.Sqrt(a.v[s][i]/c2)+a.eps) + a.decay*float64(w[s][i])
			if d := lr * upd; d != 0 {
				w[s][i] = float32(float64(w[s][i]) - d)
			}
		}
	}
	return math.Sqrt(norm)
}

// cosineLR is the learning rate at step t (1-based) of n: a cosine from
// lr down to lr/10.
func cosineLR(lr float64, t, n int) float64 {
	if n <= 1 {
		return lr
	}
	frac := float64(t-1) / float64(n-1)
	return lr * (0.1 + 0.9*0.5*(1+math.Cos(math.Pi*frac)))
}

// metricsWriter writes veRL's file-logger JSONL: {"step": N, "data": {...}}.
type metricsWriter struct{ w io.Writer }

func (m metricsWriter) write(step int, data map[string]float64) error {
	if m.w == nil {
		return nil
	}
	for k, v := range data {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("metrics step %d: %s is %v", step, k, v)
		}
	}
	b, err := json.Marshal(struct {
		Step int                `json:"step"`
		Data map[string]float64 `json:"data"`
	}{step, data})
	if err != nil {
		return err
	}
	_, err = m.w.Write(append(b, '\n'))
	return err
}
