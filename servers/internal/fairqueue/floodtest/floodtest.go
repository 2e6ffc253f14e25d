// Package floodtest is an attack on a fair-queued server, kept for the tests of every server that
// queues: one address floods it, and another address's request must not wait behind the flood.
package floodtest

import (
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"
)

// Attacker and User are the addresses the attack comes from and the victim is at: both on
// loopback, where any 127/8 address can be a connection's source.
const (
	Attacker = "127.0.0.1"
	User     = "127.0.0.2"
)

// Target is the server under attack. Its one seat (of the method the attack sends) should take a
// couple of milliseconds per request, as real work does, and record which path it served.
type Target struct {
	// Client returns a client whose connections come from the address ip, trusting the server.
	Client func(ip string) *http.Client
	// Request is a new request for path; the attack uses the paths FloodPath and UserPath.
	Request func(path string) *http.Request
	// Served returns the paths served so far, in order.
	Served func() []string
	// FloodPath and UserPath tell the attacker's requests and the user's apart.
	FloodPath, UserPath string
}

// Attack floods target from Attacker until the server refuses the attacker's requests at once (its
// queues are full), then sends one request from User, and fails t unless that is served with
// 200 before half of the flood's backlog of 300, behind which a single queue for everyone would
// make it wait whole. Fair queuing serves it after a few dozen (18 to 69 seen, the more the
// busier the machine: the queues' virtual time runs with the clock).
func Attack(t *testing.T, target Target) {
	t.Helper()
	attacker, user := target.Client(Attacker), target.Client(User)
	send := func(client *http.Client, path string) (int, time.Duration) {
		start := time.Now()
		resp, err := client.Do(target.Request(path))
		if err != nil {
			return 0, time.Since(start)
		}
		_ = resp.Body.Close()
		return resp.StatusCode, time.Since(start)
	}

	stop := make(chan struct{})
	var flood sync.WaitGroup
	quickRefusal := make(chan struct{}, 1)
	for range 360 {
		flood.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if code, took := send(attacker, target.FloodPath); code == http.StatusTooManyRequests {
					if took < time.Second {
						select {
						case quickRefusal <- struct{}{}:
						default:
						}
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
		})
	}
	defer func() {
		close(stop)
		flood.Wait()
	}()
	select {
	case <-quickRefusal:
	case <-time.After(60 * time.Second):
		t.Fatal("the attacker's requests beyond its queues were not refused at once")
	}
	sentAt := len(target.Served())
	if code, _ := send(user, target.UserPath); code != http.StatusOK {
		t.Fatalf("the other address's request ended with %d, want 200", code)
	}
	floodFirst := slices.Index(target.Served()[sentAt:], target.UserPath)
	if floodFirst < 0 || floodFirst > 150 {
		t.Errorf("%d of the flood's requests were served between the other address's request and its answer, want fewer than half its backlog of 300", floodFirst)
	}
}

// ClientFrom returns a client like base whose connections come from ip.
func ClientFrom(base *http.Client, ip string) *http.Client {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if t, ok := base.Transport.(*http.Transport); ok {
		transport = t.Clone()
	}
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	transport.DialContext = dialer.DialContext
	transport.MaxIdleConnsPerHost = 400
	return &http.Client{Timeout: 30 * time.Second, Transport: transport}
}

// Recorder is a handler for the seat's side of the attack: it works a couple of milliseconds, as a
// token exchange or a small GET does, and records each path it serves.
type Recorder struct {
	mu     sync.Mutex
	served []string
}

func (r *Recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	time.Sleep(2 * time.Millisecond)
	r.mu.Lock()
	r.served = append(r.served, req.URL.Path)
	r.mu.Unlock()
}

// Served returns the paths served so far.
func (r *Recorder) Served() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.served)
}
