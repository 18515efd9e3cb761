// Package report renders the result of a load run (loadgen.Result) for
// people: a text summary, JSON, and an HTML page with SVG charts of
// throughput, latency percentiles over time and the latency histogram.
package report
