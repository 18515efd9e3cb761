package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
)

// api is an HTTP client of one Parley node.
type api struct {
	base string // http://host:port
	hc   *http.Client
	tr   *http.Transport

	waits atomic.Int64 // set-up requests that waited on a 429 (call)
}

func newAPI(base string, o Options) *api {
	conns := max(o.Users, o.SetupConcurrency) + 16
	tr := &http.Transport{
		Proxy:               nil, // the bench talks to the URLs it is given, never through a proxy
		DialContext:         (&net.Dialer{Timeout: o.Timeout, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
	}
	return &api{
		base: base,
		tr:   tr,
		hc: &http.Client{
			Transport: tr,
			Timeout:   o.Timeout,
			// Never follow a redirect: the bench contacts only the hosts
			// it was given.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
}

func (a *api) close() { a.tr.CloseIdleConnections() }

// apiError is a non-2xx answer.
type apiError struct {
	Status int
	Code   string
	Msg    string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("http %d %s: %s", e.Status, e.Code, e.Msg)
}

// kind is the error kind counted in results: "http 409 room_full".
func (e *apiError) kind() string {
	if e.Code == "" {
		return "http " + strconv.Itoa(e.Status)
	}
	return "http " + strconv.Itoa(e.Status) + " " + e.Code
}

// call sends a JSON request for set-up and decodes a 2xx answer into out.
// A 429 (the server's per-user limit on sends and new rooms) is waited out
// as its Retry-After says and the request sent again, up to
// maxRateRetries times: set-up must finish, and none of it is measured.
func (a *api) call(ctx context.Context, method, path, token string, in, out any) (int, error) {
	var data []byte
	if in != nil {
		var err error
		if data, err = json.Marshal(in); err != nil {
			return 0, err
		}
	}
	for attempt := 0; ; attempt++ {
		status, wait, err := a.callOnce(ctx, method, path, token, data, out)
		if status != http.StatusTooManyRequests || attempt == maxRateRetries {
			return status, err
		}
		a.waits.Add(1)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return status, err
		}
	}
}

// callNoRetry is call without the retries: for sign-ups, whose limit per
// client address (2 a minute by default) no set-up can wait out.
func (a *api) callNoRetry(ctx context.Context, method, path string, in, out any) (int, error) {
	data, err := json.Marshal(in)
	if err != nil {
		return 0, err
	}
	status, _, err := a.callOnce(ctx, method, path, "", data, out)
	return status, err
}

// maxRateRetries bounds the retries of one set-up request refused with 429.
const maxRateRetries = 120

// callOnce is one attempt of call; wait is the Retry-After of a 429.
func (a *api) callOnce(ctx context.Context, method, path, token string, in []byte, out any) (status int, wait time.Duration, err error) {
	var body io.Reader
	if in != nil {
		body = bytes.NewReader(in)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, body)
	if err != nil {
		return 0, 0, err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, 0, err
	}
	if resp.StatusCode/100 != 2 {
		wait = time.Second
		if n, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && n > 0 {
			wait = time.Duration(n) * time.Second
		}
		return resp.StatusCode, wait, errorOf(resp.StatusCode, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, 0, fmt.Errorf("%s %s: decode: %w", method, path, err)
		}
	}
	return resp.StatusCode, 0, nil
}

func errorOf(status int, body []byte) *apiError {
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	json.Unmarshal(body, &e)
	return &apiError{Status: status, Code: e.Error.Code, Msg: e.Error.Message}
}

// drainBuf is a scratch buffer for discarding response bodies.
var drainBuf = make(chan []byte, 64)

// hit sends a measured request with no body and checks that it succeeds
// with a body: it returns the status and "" or an error kind. The body is
// discarded unread; the measured loop decodes nothing, so that the load
// generator spends its CPU on load.
func (a *api) hit(ctx context.Context, method, path, token string) (int, string) {
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, nil)
	if err != nil {
		return 0, "request: " + err.Error()
	}
	req.Header["Authorization"] = []string{"Bearer " + token}
	resp, err := a.hc.Do(req)
	if err != nil {
		return 0, netKind(err)
	}
	var buf []byte
	select {
	case buf = <-drainBuf:
	default:
		buf = make([]byte, 32<<10)
	}
	n, rerr := io.CopyBuffer(io.Discard, resp.Body, buf)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		// Error answers are short; re-issue nothing, classify by status.
		select {
		case drainBuf <- buf:
		default:
		}
		return resp.StatusCode, (&apiError{Status: resp.StatusCode}).kind()
	}
	select {
	case drainBuf <- buf:
	default:
	}
	if rerr != nil {
		return resp.StatusCode, netKind(rerr)
	}
	if n == 0 {
		return resp.StatusCode, "empty body"
	}
	return resp.StatusCode, ""
}

// hitJSON is hit that keeps the error code of a non-2xx answer (for
// answers the scenario expects, such as 409 room_full).
func (a *api) hitJSON(ctx context.Context, method, path, token string) (int, string, *apiError) {
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, nil)
	if err != nil {
		return 0, "request: " + err.Error(), nil
	}
	req.Header["Authorization"] = []string{"Bearer " + token}
	resp, err := a.hc.Do(req)
	if err != nil {
		return 0, netKind(err), nil
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return resp.StatusCode, netKind(err), nil
	}
	if resp.StatusCode/100 != 2 {
		e := errorOf(resp.StatusCode, data)
		return resp.StatusCode, e.kind(), e
	}
	return resp.StatusCode, "", nil
}

// netKind classifies a transport error.
func netKind(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded),
		errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "connection reset"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed"
	case errors.Is(err, syscall.EMFILE), errors.Is(err, syscall.ENFILE):
		return "too many open files"
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return "no local port"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	}
	return "network: " + err.Error()
}
