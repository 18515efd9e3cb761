package report

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"math"
	"parley/loadgen"
	"strings"
)

// WriteHTML writes a self-contained report of res: the summary, throughput
// and latency percentiles over time, and the latency histogram, as inline
// SVG. It loads nothing from the network.
func WriteHTML(w io.Writer, res *loadgen.Result) error {
	var summary bytes.Buffer
	if err := WriteText(&summary, res); err != nil {
		return err
	}
	data := struct {
		Title   string
		Summary string
		Charts  []chart
	}{
		Title: fmt.Sprintf("parley bench: %s against %s (%s)", res.Scenario, res.Target, strings.Join(res.URLs, ", ")),
		// The summary's first line names the run, as the heading does.
		Summary: summary.String()[strings.IndexByte(summary.String(), '\n')+1:],
		Charts:  charts(res),
	}
	return reportTemplate.Execute(w, data)
}

// chart is one titled chart of the report.
type chart struct {
	Title string
	SVG   template.HTML
}

// minTimeline is the fewest timeline points (seconds) worth a chart over
// time; a shorter run (a burst: seats takes a few hundredths of a second)
// gets what fits it, the histogram and, for seats, the join outcome.
const minTimeline = 2

// charts returns the charts that fit res.
func charts(res *loadgen.Result) []chart {
	var cs []chart
	if len(res.Timeline) >= minTimeline || len(res.Histogram) == 0 {
		cs = append(cs, chart{"Throughput over time", throughputChart(res)})
		if res.Messaging != nil {
			cs = append(cs, chart{"Messages sent over time", sentChart(res)})
		}
		cs = append(cs, chart{"Latency percentiles over time", latencyChart(res)})
	}
	cs = append(cs, chart{"Latency histogram", histogramChart(res)})
	if res.Seats != nil {
		cs = append(cs, chart{"Join outcome", seatsChart(res.Seats)})
	}
	return cs
}

var reportTemplate = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{.Title}}</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; max-width: 960px; }
pre { background: #f6f6f6; padding: 1em; overflow-x: auto; font-size: 13px; }
h2 { font-size: 1.1em; margin-top: 2em; }
svg { background: #fff; border: 1px solid #ddd; }
svg text { font-size: 11px; fill: #444; }
.legend span { display: inline-block; margin-right: 1.5em; font-size: 13px; }
.legend i { display: inline-block; width: 1em; height: 3px; vertical-align: middle; margin-right: .3em; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<pre>{{.Summary}}</pre>
{{range .Charts}}<h2>{{.Title}}</h2>
{{.SVG}}
{{end}}</body>
</html>
`))

// Chart geometry.
const (
	chartW, chartH = 900, 300
	padL, padR     = 70, 20
	padT, padB     = 15, 40
)

type series struct {
	name  string
	color string
	ys    []float64
}

func throughputChart(res *loadgen.Result) template.HTML {
	xs := make([]float64, len(res.Timeline))
	rate := make([]float64, len(res.Timeline))
	errs := make([]float64, len(res.Timeline))
	prev := 0.0
	for i, p := range res.Timeline {
		xs[i] = p.At
		rate[i] = p.Rate
		span := p.At - prev
		prev = p.At
		if span > 0 {
			errs[i] = float64(p.Errors) / span
		}
	}
	ss := []series{{plural(res.Unit) + "/s", "#1f77b4", rate}, {"errors/s", "#d62728", errs}}
	return lineChart(xs, ss, false, "time (s)", "per second")
}

// sentChart is the messages sent per second, on an axis of its own: a
// group room delivers each message to every member, so on the deliveries'
// axis the sends would be a flat line.
func sentChart(res *loadgen.Result) template.HTML {
	xs := make([]float64, len(res.Timeline))
	sent := make([]float64, len(res.Timeline))
	prev := 0.0
	for i, p := range res.Timeline {
		xs[i] = p.At
		if span := p.At - prev; span > 0 {
			sent[i] = float64(p.Extra) / span
		}
		prev = p.At
	}
	return lineChart(xs, []series{{"messages sent/s", "#2ca02c", sent}}, false, "time (s)", "messages per second")
}

// seatsChart is the outcome of the joins: joined, refused as full, and
// oversold (members past the seats, which must be 0).
func seatsChart(s *loadgen.SeatsResult) template.HTML {
	bars := []struct {
		name  string
		n     int64
		color string
	}{
		{"joined (201)", int64(s.Joined), "#2ca02c"},
		{"refused room_full (409)", int64(s.Full), "#1f77b4"},
		{"oversold", int64(s.Oversold), "#d62728"},
	}
	const h = 120
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" width="%d" height="%d" viewBox="0 0 %d %d" role="img">`, chartW, h, chartW, h)
	var top int64 = 1
	for _, bar := range bars {
		top = max(top, bar.n)
	}
	plotW := float64(chartW - 200 - padR - 80)
	for i, bar := range bars {
		y := 15 + i*32
		w := plotW * float64(bar.n) / float64(top)
		fmt.Fprintf(&b, `<text x="190" y="%d" text-anchor="end">%s</text>`, y+15, template.HTMLEscapeString(bar.name))
		fmt.Fprintf(&b, `<rect class="bar" x="200" y="%d" width="%.1f" height="22" fill="%s"><title>%s: %d</title></rect>`, y, math.Max(w, 1), bar.color, template.HTMLEscapeString(bar.name), bar.n)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d">%d</text>`, 205+w, y+15, bar.n)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

func latencyChart(res *loadgen.Result) template.HTML {
	n := len(res.Timeline)
	xs := make([]float64, n)
	p50, p90, p99, mx := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	for i, p := range res.Timeline {
		xs[i], p50[i], p90[i], p99[i], mx[i] = p.At, p.P50, p.P90, p.P99, p.Max
	}
	return lineChart(xs, []series{
		{"p50", "#2ca02c", p50}, {"p90", "#1f77b4", p90}, {"p99", "#ff7f0e", p99}, {"max", "#d62728", mx},
	}, true, "time (s)", "latency (ms, log scale)")
}

// lineChart draws series over xs. With logY the y axis is logarithmic and
// zero values are left out.
func lineChart(xs []float64, ss []series, logY bool, xLabel, yLabel string) template.HTML {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" width="%d" height="%d" viewBox="0 0 %d %d" role="img">`, chartW, chartH, chartW, chartH)
	if len(xs) == 0 {
		b.WriteString(`<text x="20" y="30">no data</text></svg>`)
		return template.HTML(b.String())
	}
	xMax := xs[len(xs)-1]
	if xMax <= 0 {
		xMax = 1
	}
	yMin, yMax := math.Inf(1), 0.0
	for _, s := range ss {
		for _, y := range s.ys {
			if y > 0 {
				yMin = math.Min(yMin, y)
			}
			yMax = math.Max(yMax, y)
		}
	}
	if yMax == 0 {
		yMax = 1
	}
	var ty func(float64) float64
	var ticks []float64
	plotH := float64(chartH - padT - padB)
	plotW := float64(chartW - padL - padR)
	if logY {
		lo := math.Floor(math.Log10(math.Min(yMin, yMax)))
		hi := math.Ceil(math.Log10(yMax))
		if hi <= lo {
			hi = lo + 1
		}
		ty = func(y float64) float64 { return float64(padT) + plotH*(1-(math.Log10(y)-lo)/(hi-lo)) }
		ticks = logTicks(lo, hi)
	} else {
		step := niceStep(yMax / 5)
		top := math.Ceil(yMax/step) * step
		ty = func(y float64) float64 { return float64(padT) + plotH*(1-y/top) }
		for t := 0.0; t <= top+step/2; t += step {
			ticks = append(ticks, t)
		}
	}
	tx := func(x float64) float64 { return float64(padL) + plotW*x/xMax }
	for _, t := range ticks {
		y := ty(t)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/>`, padL, y, chartW-padR, y)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`, padL-5, y+4, axisNum(t))
	}
	xStep := niceStep(xMax / 10)
	for t := 0.0; t <= xMax+xStep/100; t += xStep {
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`, tx(t), chartH-padB+15, axisNum(t))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">%s</text>`, padL+int(plotW/2), chartH-5, template.HTMLEscapeString(xLabel))
	fmt.Fprintf(&b, `<text x="12" y="%d" transform="rotate(-90 12 %d)" text-anchor="middle">%s</text>`, padT+int(plotH/2), padT+int(plotH/2), template.HTMLEscapeString(yLabel))
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.0f" height="%.0f" fill="none" stroke="#999"/>`, padL, padT, plotW, plotH)
	for _, s := range ss {
		var pts []string
		for i, y := range s.ys {
			if logY && y <= 0 {
				continue
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", tx(xs[i]), ty(y)))
		}
		if len(pts) == 0 {
			continue
		}
		fmt.Fprintf(&b, `<polyline class="series" fill="none" stroke="%s" stroke-width="1.5" points="%s"><title>%s</title></polyline>`,
			s.color, strings.Join(pts, " "), template.HTMLEscapeString(s.name))
	}
	b.WriteString(`</svg>`)
	b.WriteString(`<div class="legend">`)
	for _, s := range ss {
		fmt.Fprintf(&b, `<span><i style="background:%s"></i>%s</span>`, s.color, template.HTMLEscapeString(s.name))
	}
	b.WriteString(`</div>`)
	return template.HTML(b.String())
}

func histogramChart(res *loadgen.Result) template.HTML {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" width="%d" height="%d" viewBox="0 0 %d %d" role="img">`, chartW, chartH, chartW, chartH)
	bs := res.Histogram
	if len(bs) == 0 {
		b.WriteString(`<text x="20" y="30">no data</text></svg>`)
		return template.HTML(b.String())
	}
	var top int64
	for _, bk := range bs {
		top = max(top, bk.Count)
	}
	plotH := float64(chartH - padT - padB)
	plotW := float64(chartW - padL - padR)
	w := plotW / float64(len(bs))
	step := niceStep(float64(top) / 5)
	yTop := math.Ceil(float64(top)/step) * step
	for t := 0.0; t <= yTop+step/2; t += step {
		y := float64(padT) + plotH*(1-t/yTop)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/>`, padL, y, chartW-padR, y)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`, padL-5, y+4, axisNum(t))
	}
	every := max(1, len(bs)/10)
	for i, bk := range bs {
		h := plotH * float64(bk.Count) / yTop
		x := float64(padL) + w*float64(i)
		fmt.Fprintf(&b, `<rect class="bar" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#1f77b4"><title>%s–%s ms: %d</title></rect>`,
			x+0.5, float64(padT)+plotH-h, math.Max(w-1, 0.5), h, axisNum(bk.From), axisNum(bk.To), bk.Count)
		if i%every == 0 {
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`, x, chartH-padB+15, axisNum(bk.From))
		}
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">latency (ms, log buckets)</text>`, padL+int(plotW/2), chartH-5)
	fmt.Fprintf(&b, `<text x="12" y="%d" transform="rotate(-90 12 %d)" text-anchor="middle">%s</text>`, padT+int(plotH/2), padT+int(plotH/2), template.HTMLEscapeString(plural(res.Unit)))
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.0f" height="%.0f" fill="none" stroke="#999"/>`, padL, padT, plotW, plotH)
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// logTicks are the ticks of a log axis from 10^lo to 10^hi: 1, 2 and 5
// times each power of ten when the axis spans few decades (so that a
// latency axis from 1 to 10 ms says more than "1" and "10"), powers of
// ten alone when it spans many.
func logTicks(lo, hi float64) []float64 {
	mults := []float64{1, 2, 5}
	if hi-lo > 4 {
		mults = []float64{1}
	}
	var ticks []float64
	for e := lo; e <= hi; e++ {
		for _, m := range mults {
			if t := m * math.Pow(10, e); e < hi || m == 1 {
				ticks = append(ticks, t)
			}
		}
	}
	return ticks
}

// niceStep rounds a raw axis step up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 || math.IsNaN(raw) || math.IsInf(raw, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if raw <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// axisNum formats an axis label compactly.
func axisNum(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v >= 1e6:
		return fmt.Sprintf("%gM", math.Round(v/1e5)/10)
	case v >= 1e4:
		return fmt.Sprintf("%gk", math.Round(v/100)/10)
	case v >= 1:
		return fmt.Sprintf("%g", math.Round(v*100)/100)
	}
	return fmt.Sprintf("%.3g", v)
}
