package main

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
)

// counters are the operator's /metrics: reconciles by result, API requests by verb,
// resource and status code. Safe for concurrent use.
type counters struct {
	mu         sync.Mutex
	reconciles map[string]int64 // by result: success, error, requeue, requeue_after
	requests   map[requestKey]int64
}

type requestKey struct{ verb, resource, code string }

func newCounters() *counters {
	return &counters{reconciles: map[string]int64{}, requests: map[requestKey]int64{}}
}

func (c *counters) reconciled(result string) {
	c.mu.Lock()
	c.reconciles[result]++
	c.mu.Unlock()
}

// wrap is a rest.Config.Wrap: every request is counted once its answer came (a request
// that got none is counted with code "<error>").
func (c *counters) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		resp, err := next.RoundTrip(req)
		code := "<error>"
		if err == nil {
			code = fmt.Sprint(resp.StatusCode)
		}
		key := requestKey{verb(req), resourceOf(req.URL.Path), code}
		c.mu.Lock()
		c.requests[key]++
		c.mu.Unlock()
		return resp, err
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// resourcePath is an API path's group ("" for the core group) and its part after the
// group and version and after namespaces/NS: RESOURCE[/NAME[/SUB]], or nil for a path
// outside the API.
func resourcePath(path string) (string, []string) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	group := ""
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		group, parts = parts[1], parts[3:]
	default:
		return "", nil
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	return group, parts
}

// resourceOf is the resource a request is about as reconcilekit's client names it: with
// its group, if not the core one, and its subresource ("cnclaims.core.matrixorigin.io/status").
func resourceOf(path string) string {
	group, parts := resourcePath(path)
	if len(parts) == 0 {
		return path
	}
	resource := parts[0]
	if group != "" {
		resource += "." + group
	}
	if len(parts) >= 3 {
		resource += "/" + parts[2]
	}
	return resource
}

// verb is the request's Kubernetes verb, as reconcilekit's client names it.
func verb(req *http.Request) string {
	switch req.Method {
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		return "delete"
	}
	if req.URL.Query().Get("watch") == "true" {
		return "watch"
	}
	if _, parts := resourcePath(req.URL.Path); len(parts) == 1 {
		return "list"
	}
	return "get"
}

// ServeHTTP writes the counters in Prometheus' text format.
func (c *counters) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	c.mu.Lock()
	var lines []string
	for result, n := range c.reconciles {
		lines = append(lines, fmt.Sprintf(
			"controller_runtime_reconcile_total{controller=%q,result=%q} %d", "cnclaim", result, n))
	}
	for key, n := range c.requests {
		lines = append(lines, fmt.Sprintf(
			"reconcilekit_client_requests_total{verb=%q,resource=%q,code=%q} %d",
			key.verb, key.resource, key.code, n))
	}
	c.mu.Unlock()
	sort.Strings(lines)
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	fmt.Fprint(w, strings.Join(lines, "\n")+"\n")
}
