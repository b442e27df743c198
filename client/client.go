package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/queen-go/queen/api"
)

// DefaultURL is the broker a Config without URLs speaks to.
const DefaultURL = "http://localhost:6632"

// Config configures a Client. The zero value speaks to DefaultURL without
// a token.
type Config struct {
	// URL is the broker's base URL; URLs, when set, are several brokers of
	// one cluster, and each lane (queue:partition:group) is pinned to one
	// of them by consistent hashing.
	URL  string
	URLs []string
	// Token is sent as "Authorization: Bearer <token>"; "" sends none.
	Token string
	// HTTPClient, when set, sends the requests; its Timeout should be 0,
	// since long polls need their own (the poll's timeout plus 5 s).
	HTTPClient *http.Client
	// MaxIdleConns is the idle pool kept per broker; 0 means 64.
	MaxIdleConns int
	// RequestTimeout bounds a request that is not a long poll; 0 means 60 s.
	RequestTimeout time.Duration
	// Retry is how 429s, 503s and lost connections are retried.
	Retry Retry
}

// Retry is the retry policy: in place, on the same broker, with
// exponential backoff and jitter. A 429 or a 503 carrying Retry-After waits
// what it asks. A request is retried after a lost connection only when
// sending it twice is harmless (reads, acknowledgements, lease extensions,
// pushes whose items all carry a transactionId — Push gives every item
// one).
type Retry struct {
	// Attempts is the number of tries of a request; 0 means 10. A long
	// poll retries a 429 without bound.
	Attempts int
	// Base is the first backoff, doubled after each try; 0 means 500 ms.
	Base time.Duration
	// Max caps the backoff; 0 means 30 s.
	Max time.Duration
}

// Client speaks to one broker, or to several of a cluster. It is safe for
// concurrent use.
type Client struct {
	hc      *http.Client
	auth    []string
	ring    ring
	timeout time.Duration
	retry   Retry
}

// New returns a client for cfg.
func New(cfg Config) (*Client, error) {
	urls := cfg.URLs
	if len(urls) == 0 {
		urls = []string{cfg.URL}
	}
	bases := make([]string, 0, len(urls))
	for _, u := range urls {
		if u == "" {
			u = DefaultURL
		}
		p, err := url.Parse(u)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return nil, fmt.Errorf("client: bad broker URL %q: want http(s)://host[:port]", u)
		}
		bases = append(bases, strings.TrimRight(u, "/"))
	}
	c := &Client{
		hc:      cfg.HTTPClient,
		ring:    newRing(bases),
		timeout: cfg.RequestTimeout,
		retry:   cfg.Retry,
	}
	if cfg.Token != "" {
		c.auth = []string{"Bearer " + cfg.Token}
	}
	if c.timeout <= 0 {
		c.timeout = 60 * time.Second
	}
	if c.retry.Attempts <= 0 {
		c.retry.Attempts = 10
	}
	if c.retry.Base <= 0 {
		c.retry.Base = 500 * time.Millisecond
	}
	if c.retry.Max <= 0 {
		c.retry.Max = 30 * time.Second
	}
	if c.hc == nil {
		conns := cfg.MaxIdleConns
		if conns <= 0 {
			conns = 64
		}
		c.hc = &http.Client{Transport: &http.Transport{
			Proxy:               http.ProxyFromEnvironment,
			DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        conns * len(bases),
			MaxIdleConnsPerHost: conns,
			IdleConnTimeout:     90 * time.Second,
			ForceAttemptHTTP2:   true,
			// The broker does not compress its answers: asking costs a header.
			DisableCompression: true,
		}}
	}
	return c, nil
}

// call is one request: where it goes and how it may be retried.
type call struct {
	method, path string
	query        url.Values
	body         []byte // nil: no body
	lane         string // the lane key that picks the broker
	// idempotent allows a retry after a lost connection.
	idempotent bool
	// poll is a long poll's server-side timeout: the HTTP timeout is 5 s
	// more, and 429s are retried without bound.
	poll time.Duration
}

// response is an answer with a 2xx status.
type response struct {
	status int
	body   []byte
}

// send sends a call with the retry policy and returns its 2xx answer; any
// other answer is an *api.Error.
func (c *Client) send(ctx context.Context, cl call) (response, error) {
	base := c.ring.pick(cl.lane)
	target := base + cl.path
	if len(cl.query) > 0 {
		target += "?" + cl.query.Encode()
	}
	timeout := c.timeout
	if cl.poll > 0 {
		timeout = cl.poll + 5*time.Second
	}
	for attempt := 1; ; attempt++ {
		res, retryAfter, err := c.once(ctx, cl, target, timeout)
		if err == nil {
			return res, nil
		}
		if ctx.Err() != nil {
			return response{}, err
		}
		var ae *api.Error
		retry := false
		switch {
		case errors.As(err, &ae):
			switch ae.Status {
			case http.StatusTooManyRequests:
				retry = true
			case http.StatusServiceUnavailable:
				// The broker refused the request before doing it.
				retry = retryAfter > 0 || ae.Code == api.CodeShuttingDown
			}
		default:
			retry = cl.idempotent
		}
		unbounded := cl.poll > 0 && ae != nil && ae.Status == http.StatusTooManyRequests
		if !retry || (attempt >= c.retry.Attempts && !unbounded) {
			return response{}, err
		}
		wait := retryAfter
		if wait <= 0 {
			wait = c.backoff(attempt)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return response{}, err
		case <-t.C:
		}
	}
}

// backoff is the wait after the attempt-th try: Base doubled per try,
// capped at Max, with jitter over its upper half.
func (c *Client) backoff(attempt int) time.Duration {
	d := c.retry.Max
	if attempt < 30 {
		d = min(c.retry.Base<<(attempt-1), c.retry.Max)
	}
	return d/2 + rand.N(d/2+1)
}

// once sends one try. It returns the Retry-After of a refusal.
func (c *Client) once(ctx context.Context, cl call, target string, timeout time.Duration) (response, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var rd io.Reader
	if cl.body != nil {
		rd = bytes.NewReader(cl.body)
	}
	req, err := http.NewRequestWithContext(ctx, cl.method, target, rd)
	if err != nil {
		return response{}, 0, err
	}
	if cl.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.auth != nil {
		req.Header["Authorization"] = c.auth
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return response{}, 0, fmt.Errorf("%s %s: %w", cl.method, cl.path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNoContent {
		// No body, never parsed.
		return response{status: resp.StatusCode}, 0, nil
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return response{}, 0, fmt.Errorf("%s %s: read answer: %w", cl.method, cl.path, err)
	}
	if resp.StatusCode/100 == 2 {
		return response{status: resp.StatusCode, body: body}, 0, nil
	}
	var eb api.ErrorBody
	if json.Unmarshal(body, &eb) != nil || eb.Error == "" {
		eb.Error = strings.TrimSpace(string(body))
		if eb.Error == "" {
			eb.Error = http.StatusText(resp.StatusCode)
		}
	}
	e := api.ErrorFor(resp.StatusCode, eb.Error, eb.Code)
	var after time.Duration
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s >= 0 {
		e = e.WithRetryAfter(s)
		after = time.Duration(s) * time.Second
	}
	return response{}, after, e
}

// json sends a call and decodes its answer into out (unless out is nil or
// the answer is a 204).
func (c *Client) json(ctx context.Context, cl call, in, out any) (int, error) {
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return 0, fmt.Errorf("%s %s: encode: %w", cl.method, cl.path, err)
		}
		cl.body = b
	}
	res, err := c.send(ctx, cl)
	if err != nil {
		return 0, err
	}
	if out != nil && res.status != http.StatusNoContent {
		if err := json.Unmarshal(res.body, out); err != nil {
			return res.status, fmt.Errorf("%s %s: decode answer: %w", cl.method, cl.path, err)
		}
	}
	return res.status, nil
}

// ring is a consistent-hash ring of brokers: each has many points, and a
// lane belongs to the first point at or after its hash, so that adding or
// removing a broker moves only its own lanes.
type ring struct {
	points []point
	bases  []string
}

type point struct {
	hash uint64
	base int
}

const pointsPerBroker = 160

func newRing(bases []string) ring {
	r := ring{bases: bases}
	if len(bases) < 2 {
		return r
	}
	for i, b := range bases {
		for v := range pointsPerBroker {
			r.points = append(r.points, point{hash64(b + "#" + strconv.Itoa(v)), i})
		}
	}
	slices.SortFunc(r.points, func(a, b point) int {
		switch {
		case a.hash < b.hash:
			return -1
		case a.hash > b.hash:
			return 1
		}
		return 0
	})
	return r
}

func (r ring) pick(lane string) string {
	if len(r.points) == 0 {
		return r.bases[0]
	}
	h := hash64(lane)
	i, _ := slices.BinarySearchFunc(r.points, h, func(p point, h uint64) int {
		switch {
		case p.hash < h:
			return -1
		case p.hash > h:
			return 1
		}
		return 0
	})
	if i == len(r.points) {
		i = 0
	}
	return r.bases[r.points[i].base]
}

func hash64(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	// FNV's low bits mix poorly for similar keys: finish with a murmur
	// mixer so that neighbouring lanes spread over the ring.
	x := h.Sum64()
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// Lane is the key a lane is pinned by: queue:partition:group, or
// namespace:task:group for a pop by labels.
func Lane(queue, partition, group string) string {
	return queue + ":" + partition + ":" + group
}

// Broker returns the base URL the lane is pinned to.
func (c *Client) Broker(lane string) string { return c.ring.pick(lane) }

// Do sends one request, once, through the client's connections and with
// its token, and returns the answer's status and body whatever the status:
// no retry, no error decoding. It is for callers that measure every try
// (queen bench) or speak routes this package has no method for; ctx alone
// bounds it. path is the route with its query string; body, when not nil,
// is sent as JSON.
func (c *Client) Do(ctx context.Context, method, path string, body []byte) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.ring.pick("")+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.auth != nil {
		req.Header["Authorization"] = c.auth
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, nil, err
	}
	return resp.StatusCode, out, nil
}
