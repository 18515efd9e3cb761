package loadgen

import (
	"context"
	"fmt"
	"net/http"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// metrics scrapes the node's /metrics and returns each counter, gauge and
// untyped family by name, summed over its label sets; summaries and
// histograms appear as NAME_count and NAME_sum.
func (a *api) metrics(ctx context.Context) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", a.base+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain; version=0.0.4")
	resp, err := a.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape metrics: status %d", resp.StatusCode)
	}
	return parseMetrics(resp.Body)
}

func parseMetrics(rd interface{ Read([]byte) (int, error) }) (map[string]float64, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(rd)
	if err != nil {
		return nil, fmt.Errorf("parse metrics: %w", err)
	}
	out := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out[name] += m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[name] += m.GetGauge().GetValue()
			case dto.MetricType_UNTYPED:
				out[name] += m.GetUntyped().GetValue()
			case dto.MetricType_SUMMARY:
				out[name+"_count"] += float64(m.GetSummary().GetSampleCount())
				out[name+"_sum"] += m.GetSummary().GetSampleSum()
			case dto.MetricType_HISTOGRAM:
				out[name+"_count"] += float64(m.GetHistogram().GetSampleCount())
				out[name+"_sum"] += m.GetHistogram().GetSampleSum()
			}
		}
	}
	return out, nil
}
