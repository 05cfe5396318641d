package reports

import (
	"bytes"
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
	"sync"
)

// HTML renders the report as one self-contained page: inline CSS and
// inline SVG charts (accuracy with Wilson intervals, paired differences
// with bootstrap intervals, training curves), no script and nothing
// fetched from the network. The tables are the Markdown's, cell for cell.
func (r *Report) HTML() ([]byte, error) {
	var b bytes.Buffer
	data := struct {
		R        *Report
		Sections []section
		Stats    []template.HTML
		Curves   []template.HTML
	}{R: r, Sections: r.sections(func(s string) string { return s })}
	if len(r.Tables) > 0 {
		data.Stats = []template.HTML{r.accuracyChart(), r.differenceChart()}
	}
	for _, m := range curveMetrics {
		if c := r.curveChart(m.name); c != "" {
			data.Curves = append(data.Curves, c)
		}
	}
	if err := page().Execute(&b, data); err != nil {
		return nil, fmt.Errorf("render html: %w", err)
	}
	return b.Bytes(), nil
}

// page is parsed when first used: every rlgate command starts with this
// package linked, and few render HTML.
var page = sync.OnceValue(parsePage)

func parsePage() *template.Template {
	return template.Must(template.New("report").Funcs(template.FuncMap{
		"cellClass": cellClass,
	}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>rlgate report</title>
<style>
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1d2330; margin: 0 auto; padding: 1.5em 2em 4em; max-width: 1280px; }
h1 { font-size: 1.6em; margin: .6em 0 .2em; }
h2 { font-size: 1.25em; margin: 1.6em 0 .4em; border-bottom: 1px solid #d5d9e0; padding-bottom: .2em; }
.headline { font-weight: 600; padding: .8em 1em; border-radius: 6px; margin: 0; }
.unsupported { background: #fdecea; border: 1px solid #e0a39c; color: #7a1f12; }
.supported { background: #e8f5ea; border: 1px solid #97c9a0; color: #1c5a2a; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; margin: .4em 0; font-size: 13px; }
th, td { border: 1px solid #d5d9e0; padding: 3px 7px; text-align: left; vertical-align: top; }
th { background: #f1f3f6; font-weight: 600; }
tbody tr:nth-child(even) { background: #fafbfc; }
td { font-variant-numeric: tabular-nums; white-space: nowrap; }
td.long { white-space: normal; min-width: 28em; }
td.digest { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 12px; }
.note { color: #535b6b; font-size: 13px; }
.charts { display: flex; flex-wrap: wrap; gap: 1.2em 2em; margin-bottom: 1em; }
figure { margin: 0; }
figcaption { font-size: 13px; font-weight: 600; color: #353c4a; max-width: 700px; margin-bottom: .3em; }
svg text { font: 12px system-ui, sans-serif; fill: #1d2330; }
</style>
</head>
<body>
<p class="headline {{if .R.Supported}}supported{{else}}unsupported{{end}}">{{.R.Headline}}</p>
<h1>rlgate report</h1>
<p class="note">Every number below is read from the ledger at head <code>{{.R.Head}}</code>; <code>rlgate report --check DIR</code> re-derives them.</p>
{{if .Stats}}<h2 id="charts">Accuracy and paired differences</h2>
<div class="charts">
{{range .Stats}}{{.}}
{{end}}</div>
{{end}}{{if .Curves}}<h2 id="curves">Training curves</h2>
<div class="charts">
{{range .Curves}}{{.}}
{{end}}</div>
{{end}}
{{range .Sections}}<h2 id="{{.ID}}">{{.Title}}</h2>
{{if .Intro}}<p>{{.Intro}}</p>
{{end}}{{if .Header}}<div class="scroll"><table>
<thead><tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>
{{range .Rows}}<tr>{{range .}}<td{{cellClass .}}>{{.}}</td>{{end}}</tr>
{{end}}</tbody>
</table></div>
{{end}}{{range .Notes}}<p class="note">{{.}}</p>
{{end}}{{end}}</body>
</html>
`))
}

// labelColor gives each model label its colour in every chart.
func labelColor(label string) string {
	switch label {
	case "base":
		return "#6b7280"
	case "sft":
		return "#2563eb"
	case "rl":
		return "#15803d"
	case "noupdate":
		return "#c2410c"
	}
	return "#7c3aed"
}

// cellClass styles a table cell: digests in a fixed-width font, long
// text (a finding, the verdict) wrapping, everything else on one line.
func cellClass(s string) template.HTMLAttr {
	switch {
	case strings.HasPrefix(s, "blake3:"):
		return ` class="digest"`
	case len(s) > 60:
		return ` class="long"`
	}
	return ""
}

const (
	chartW     = 720
	labelW     = 150
	valueW     = 190
	rowH       = 30
	axisH      = 34
	curveW     = 350
	curveH     = 220
	curveLeft  = 64
	curveRight = 14
)

// accuracyChart draws each model's accuracy over all tasks with its
// Wilson interval, on a 0–1 axis.
func (r *Report) accuracyChart() template.HTML {
	t := r.Tables[0]
	h := len(t.Rows)*rowH + axisH + 10
	plotW := chartW - labelW - valueW
	x := func(v float64) float64 { return labelW + v*float64(plotW) }
	var b strings.Builder
	fmt.Fprintf(&b, `<figure><figcaption>Accuracy over all %d tasks with %g%% Wilson intervals</figcaption>`, t.Tasks, 100*(1-r.Params.Alpha))
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="accuracy with Wilson intervals">`, chartW, h, chartW, h)
	axis(&b, x, 0, 1, []float64{0, 0.25, 0.5, 0.75, 1}, len(t.Rows)*rowH+6, "%.2f")
	for i, m := range t.Rows {
		y := float64(i*rowH + rowH/2 + 4)
		c := labelColor(m.Label)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" dominant-baseline="middle" text-anchor="end">%s</text>`, labelW-10, y, template.HTMLEscapeString(m.Label))
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="3"/>`, x(m.Wilson.Lo), x(m.Wilson.Hi), y, y, c)
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="6" fill="%s"/>`, x(m.Accuracy), y, c)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" dominant-baseline="middle">%s %s</text>`, labelW+plotW+12, y, Number(m.Accuracy), Interval(m.Wilson))
	}
	b.WriteString(`</svg></figure>`)
	return template.HTML(b.String())
}

// differenceChart draws each model's paired difference to the baseline
// with its bootstrap interval around a zero line; unless the gate passed
// it is titled a measured difference, not a gain.
func (r *Report) differenceChart() template.HTML {
	t := r.Tables[0]
	var rows []ModelRow
	span := 0.05
	for _, m := range t.Rows {
		if m.Pair != nil {
			rows = append(rows, m)
			span = max(span, math.Abs(m.Pair.Bootstrap.Percentile.Lo), math.Abs(m.Pair.Bootstrap.Percentile.Hi), math.Abs(m.Pair.Delta))
		}
	}
	span = math.Ceil(span*10) / 10
	h := len(rows)*rowH + axisH + 10
	plotW := chartW - labelW - valueW
	x := func(v float64) float64 { return labelW + (v+span)/(2*span)*float64(plotW) }
	caption := "Paired difference to " + r.Params.Baseline + " with " + fmt.Sprintf("%g%%", 100*(1-r.Params.Alpha)) + " bootstrap intervals"
	if !r.Supported {
		caption = "Measured paired difference to " + r.Params.Baseline + " with " + fmt.Sprintf("%g%%", 100*(1-r.Params.Alpha)) +
			" bootstrap intervals (unsupported: the gate did not pass, so no gain is stated)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<figure><figcaption>%s</figcaption>`, template.HTMLEscapeString(caption))
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="paired differences">`, chartW, h, chartW, h)
	axis(&b, x, -span, span, []float64{-span, -span / 2, 0, span / 2, span}, len(rows)*rowH+6, "%+.2f")
	fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="0" y2="%d" stroke="#1d2330" stroke-dasharray="3 3"/>`, x(0), x(0), len(rows)*rowH+6)
	for i, m := range rows {
		y := float64(i*rowH + rowH/2 + 4)
		c := labelColor(m.Label)
		p := m.Pair
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" dominant-baseline="middle" text-anchor="end">%s − %s</text>`, labelW-10, y, template.HTMLEscapeString(m.Label), template.HTMLEscapeString(p.Baseline))
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="3"/>`, x(p.Bootstrap.Percentile.Lo), x(p.Bootstrap.Percentile.Hi), y, y, c)
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="10" height="10" fill="%s"/>`, x(p.Delta)-5, y-5, c)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" dominant-baseline="middle">%s %s</text>`, labelW+plotW+12, y, Signed(p.Delta), SignedInterval(p.Bootstrap.Percentile))
	}
	b.WriteString(`</svg></figure>`)
	return template.HTML(b.String())
}

// axis draws a horizontal axis at y with ticks at the given values.
func axis(b *strings.Builder, x func(float64) float64, lo, hi float64, ticks []float64, y int, format string) {
	fmt.Fprintf(b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#8a93a3"/>`, x(lo), x(hi), y, y)
	for _, v := range ticks {
		fmt.Fprintf(b, `<line x1="%.1f" x2="%.1f" y1="0" y2="%d" stroke="#e6e9ee"/>`, x(v), x(v), y)
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`, x(v), y+18, fmt.Sprintf(format, v))
	}
}

// curveTitles name the curves for a reader.
var curveTitles = map[string]string{"reward": "Reward (mean)", "kl": "KL", "lr": "Learning rate", "response_length": "Response length (mean tokens)"}

// curveChart draws one training metric of every training run, one line
// per run; "" when none logged it.
func (r *Report) curveChart(metric string) template.HTML {
	var cs []Curve
	for _, c := range r.Curves {
		if c.Metric == metric {
			cs = append(cs, c)
		}
	}
	return CurveChart(curveTitles[metric], metric, cs)
}

// CurveChart draws curves cs in one SVG figure captioned "TITLE by step",
// one line per curve with its label in the legend and its run as the
// label's tooltip; "" when cs is empty. The report draws its training
// metrics with it and rlgate ui a run's metrics, so both look alike.
func CurveChart(title, metric string, cs []Curve) template.HTML {
	var x0, x1, y0, y1 float64
	for i, c := range cs {
		if i == 0 {
			x0, x1, y0, y1 = c.Points[0][0], c.Points[0][0], c.Min, c.Max
		}
		x0, x1 = min(x0, c.Points[0][0]), max(x1, c.Points[len(c.Points)-1][0])
		y0, y1 = min(y0, c.Min), max(y1, c.Max)
	}
	if len(cs) == 0 {
		return ""
	}
	if x1 == x0 {
		x1 = x0 + 1
	}
	if y1 == y0 {
		pad := math.Max(math.Abs(y0)*0.1, 1e-9)
		if y0 == 0 {
			pad = 1
		}
		y0, y1 = y0-pad, y1+pad
	}
	legendH := 20 * len(cs)
	plotH := curveH - 40
	px := func(v float64) float64 { return curveLeft + (v-x0)/(x1-x0)*float64(curveW-curveLeft-curveRight) }
	py := func(v float64) float64 { return 10 + (y1-v)/(y1-y0)*float64(plotH-10) }
	h := curveH + legendH
	var b strings.Builder
	fmt.Fprintf(&b, `<figure><figcaption>%s by step</figcaption>`, template.HTMLEscapeString(title))
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s">`, curveW, h, curveW, h, template.HTMLEscapeString(metric))
	fmt.Fprintf(&b, `<rect x="%d" y="10" width="%d" height="%d" fill="none" stroke="#8a93a3"/>`, curveLeft, curveW-curveLeft-curveRight, plotH-10)
	for _, v := range []float64{y0, (y0 + y1) / 2, y1} {
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`, curveLeft-6, py(v), axisLabel(v))
	}
	for _, v := range []float64{x0, x1} {
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%.0f</text>`, px(v), plotH+16, v)
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">step</text>`, px((x0+x1)/2), plotH+16)
	for i, c := range cs {
		var pts []string
		for _, p := range c.Points {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(p[0]), py(p[1])))
		}
		col := labelColor(c.Label)
		dash := ""
		if i > 0 {
			dash = fmt.Sprintf(` stroke-dasharray="%d 3"`, 9-2*min(i, 3))
		}
		if len(pts) == 1 {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`, px(c.Points[0][0]), py(c.Points[0][1]), col)
		} else {
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>`, col, dash, strings.Join(pts, " "))
		}
		ly := curveH + 20*i - 8
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="2"%s/>`, curveLeft, curveLeft+24, ly, ly, col, dash)
		// The run id is long (stage-time-suffix) and would run past the
		// chart: the legend names the label, the run is its tooltip and is
		// in the lineage table.
		fmt.Fprintf(&b, `<text x="%d" y="%d" dominant-baseline="middle"><title>%s</title>%s</text>`, curveLeft+30, ly,
			template.HTMLEscapeString(c.Run), template.HTMLEscapeString(c.Label))
	}
	b.WriteString(`</svg></figure>`)
	return template.HTML(b.String())
}

// axisLabel writes a curve's axis value in three significant digits, and
// as a whole number from 1,000 up, where %g would write token counts with
// an exponent (1.99e+03).
func axisLabel(v float64) string {
	if a := math.Abs(v); a >= 1000 && a < 1e6 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}
