// Package fakewatch lets a test wait until informers on fake clientsets have their watches.
//
// The fakes' object tracker keeps no resource versions, so an informer that lists and then
// watches misses every change made in between, for good: WaitForCacheSync returns after the list,
// not after the watch. A test that writes through a fake and then waits for a lister to show the
// write must first wait here.
package fakewatch

import (
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	k8stesting "k8s.io/client-go/testing"
)

// Fake is what every generated fake clientset provides.
type Fake interface {
	PrependWatchReactor(resource string, reaction k8stesting.WatchReactionFunc)
	Tracker() k8stesting.ObjectTracker
}

// Watches records which resources have a registered watch.
type Watches struct {
	mu      sync.Mutex
	changed chan struct{}
	started []string
}

// Record makes each fake report its watches to the returned Watches. Call it before any informer
// starts.
func Record(fakes ...Fake) *Watches {
	w := &Watches{changed: make(chan struct{})}
	for _, f := range fakes {
		tracker := f.Tracker()
		// Served as the fakes' own default reactor does, and reported only once the tracker has
		// registered the watch, so a change made after Wait returns reaches it.
		f.PrependWatchReactor("*", func(action k8stesting.Action) (bool, watch.Interface, error) {
			var opts metav1.ListOptions
			if a, ok := action.(k8stesting.WatchActionImpl); ok {
				opts = a.ListOptions
			}
			watcher, err := tracker.Watch(action.GetResource(), action.GetNamespace(), opts)
			if err != nil {
				return true, nil, err
			}
			w.add(action.GetResource().Resource)
			return true, watcher, nil
		})
	}
	return w
}

func (w *Watches) add(resource string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !slices.Contains(w.started, resource) {
		w.started = append(w.started, resource)
	}
	close(w.changed)
	w.changed = make(chan struct{})
}

// Wait fails t unless every resource in want (plural, lower case: "secrets") has a watch within
// timeout.
func (w *Watches) Wait(t testing.TB, timeout time.Duration, want ...string) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		w.mu.Lock()
		missing := slices.DeleteFunc(slices.Clone(want), func(r string) bool { return slices.Contains(w.started, r) })
		changed, started := w.changed, slices.Clone(w.started)
		w.mu.Unlock()
		if len(missing) == 0 {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("informers watch %v after %v; still waiting for %v", started, timeout, missing)
		}
	}
}
