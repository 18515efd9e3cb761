package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// newClient returns the HTTP client of a webhook whose URL names host:
// no proxy, no redirects followed, every connection checked by f, each
// request bounded by timeout (connecting, sending, the answer's headers
// and a bounded read of its body).
func newClient(f *Filter, host string, timeout time.Duration) *http.Client {
	d := &net.Dialer{Timeout: timeout, Control: f.Control(host)}
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			Proxy:                 nil,
			DialContext:           d.DialContext,
			TLSHandshakeTimeout:   timeout,
			ResponseHeaderTimeout: timeout,
			MaxIdleConnsPerHost:   8,
			IdleConnTimeout:       90 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Delivery outcomes, the result label of parley_webhook_deliveries_total.
const (
	resultOK       = "ok"
	resultFailed   = "failed"   // a connection error or an answer other than 2xx
	resultTimeout  = "timeout"  // no answer within the timeout
	resultRedirect = "redirect" // a 3xx: never followed
	resultRefused  = "refused"  // the address filter refused the target
)

// post sends one signed delivery and returns its outcome; err says why
// when it is not resultOK.
func post(ctx context.Context, c *http.Client, target string, secret []byte, id string, body []byte, now time.Time) (string, error) {
	ts := now.Unix()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return resultFailed, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Parley-Webhook/1")
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(HeaderSignature, Sign(secret, ts, body))
	req.Header.Set(HeaderEvent, id)
	resp, err := c.Do(req)
	if err != nil {
		var refused *RefusedError
		var ne net.Error
		var ue *url.Error
		switch {
		case errors.As(err, &refused):
			return resultRefused, refused
		case errors.As(err, &ne) && ne.Timeout(), errors.As(err, &ue) && ue.Timeout():
			return resultTimeout, err
		}
		return resultFailed, err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return resultOK, nil
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return resultRedirect, fmt.Errorf("webhook: the receiver answered %s (to %q): redirects are not followed", resp.Status, resp.Header.Get("Location"))
	}
	return resultFailed, fmt.Errorf("webhook: the receiver answered %s", resp.Status)
}
