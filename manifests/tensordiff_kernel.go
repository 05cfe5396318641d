package manifests

import "math"

// deltaAcc sums the statistics of Δ over a run of elements.
type deltaAcc struct {
	differ                        bool // some bit differs
	changed, nonFinite            int64
	sumAbs, maxAbs, sumSq, sumSqA float64
}

// laneSums is what sumLanes leaves: each statistic in four lanes, lane j
// over the elements i ≡ j (mod 4), in element order. The layout is shared
// with the assembly kernel.
type laneSums struct {
	abs, sq, sqA, max [4]float64
	changed           [4]int64
}

// sumLanesGo is the portable sumLanes, and the reference the assembly
// kernel must match bit for bit. len(a) must be a multiple of 4. The
// explicit float64 conversions forbid fused multiply-adds, which would round
// differently on some machines.
func sumLanesGo(a, b []float64, tol Tolerance, out *laneSums) {
	b = b[:len(a)]
	for i := 0; i+3 < len(a); i += 4 {
		for j := range 4 {
			x := a[i+j]
			diff := b[i+j] - x
			d := math.Abs(diff)
			out.abs[j] += d
			out.sq[j] += float64(diff * diff)
			out.sqA[j] += float64(x * x)
			if d > out.max[j] {
				out.max[j] = d
			}
			if d > tol.ATol+float64(tol.RTol*math.Abs(x)) {
				out.changed[j]++
			}
		}
	}
}

// reduce adds four lanes in a fixed order.
func reduce(l [4]float64) float64 { return (l[0] + l[1]) + (l[2] + l[3]) }

// add accumulates Δ = b − a element-wise and returns how many elements fall
// outside tol. It is the hot loop of a diff, so sumLanes first assumes every
// value finite and checks nothing per element: a value that is not finite,
// or a square that overflows, poisons the sums with NaN or ±Inf, and only
// then is the run redone through addOne, which holds the full rule.
func (s *deltaAcc) add(a, b []float64, tol Tolerance) (changed int64) {
	n := len(a) &^ 3
	var l laneSums
	sumLanes(a[:n], b[:n], tol, &l)
	sumAbs, sumSq, sumSqA := reduce(l.abs), reduce(l.sq), reduce(l.sqA)
	if sumAbs+sumSq+sumSqA <= math.MaxFloat64 {
		s.sumAbs += sumAbs
		s.sumSq += sumSq
		s.sumSqA += sumSqA
		s.maxAbs = max(s.maxAbs, l.max[0], l.max[1], l.max[2], l.max[3])
		changed = l.changed[0] + l.changed[1] + l.changed[2] + l.changed[3]
	} else {
		n = 0 // start over, carefully
	}
	for i := n; i < len(a); i++ {
		changed += s.addOne(a[i], b[i], tol)
	}
	return changed
}

// maxSquarable is the largest magnitude whose square is finite.
var maxSquarable = math.Sqrt(math.MaxFloat64)

// addOne accumulates one element and returns 1 if it changed. Δ enters the
// sums only when its square is finite; NaN against NaN and an infinity
// against itself are unchanged; any other Δ is a changed, non-finite
// element.
func (s *deltaAcc) addOne(x, y float64, tol Tolerance) int64 {
	if math.Abs(x) <= maxSquarable {
		s.sumSqA += float64(x * x)
	}
	d := math.Abs(y - x)
	switch {
	case d <= maxSquarable:
		s.sumAbs += d
		s.sumSq += float64(d * d)
		s.maxAbs = max(s.maxAbs, d)
		if d > tol.ATol+float64(tol.RTol*math.Abs(x)) {
			return 1
		}
		return 0
	case x == y || (x != x && y != y): // same infinity, or NaN on both sides
		return 0
	}
	s.nonFinite++
	return 1
}

func (s *deltaAcc) merge(o deltaAcc) {
	s.differ = s.differ || o.differ
	s.changed += o.changed
	s.nonFinite += o.nonFinite
	s.sumAbs += o.sumAbs
	s.maxAbs = max(s.maxAbs, o.maxAbs)
	s.sumSq += o.sumSq
	s.sumSqA += o.sumSqA
}

// finish turns the sums into d's statistics; d.Elements must be set.
func (s *deltaAcc) finish(d *TensorDelta) {
	d.Identical = !s.differ
	d.Changed, d.NonFinite = s.changed, s.nonFinite
	if d.Elements > 0 {
		d.ChangedFraction = float64(s.changed) / float64(d.Elements)
	}
	if finite := d.Elements - s.nonFinite; finite > 0 {
		d.MeanAbsDelta = s.sumAbs / float64(finite)
	}
	d.MaxAbsDelta = s.maxAbs
	d.L2Delta = math.Sqrt(s.sumSq)
	normA := math.Sqrt(s.sumSqA)
	switch {
	case normA > 0:
		r := d.L2Delta / normA
		d.RelL2Delta = &r
	case d.L2Delta == 0:
		r := 0.0
		d.RelL2Delta = &r
	}
}
