// Package controller is the one level-triggered loop every controller of both servers runs:
// informer events become keys on a rate-limited workqueue, a sync function reconciles one key,
// a failed sync is retried with exponential backoff, every key is synced once after the
// informers have synced and again every resync interval, so a missed event or an outside change
// (an upstream that recovered, a rotated file) is acted on within that interval.
//
// A controller that reconciles one thing as a whole (a strategy, a set of listeners) uses a
// single fixed key; one that reconciles objects one by one uses their names.
package controller

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Defaults of Options' zero values.
const (
	DefaultResync     = time.Minute
	DefaultMinBackoff = time.Second
	DefaultMaxBackoff = 2 * time.Minute
)

// Options describe one controller. Name and Sync are required.
type Options struct {
	// Name appears in logs and names the workqueue.
	Name string
	// Sync reconciles one key; an error asks for a retry with backoff. ctx carries a logger
	// with the controller's name.
	Sync func(ctx context.Context, key string) error
	// Keys lists every key for the first sync, the resync and All. Nil means the single key
	// Singleton.
	Keys func() ([]string, error)
	// Resync is how often every key is synced without an event (DefaultResync when zero).
	Resync time.Duration
	// MinBackoff and MaxBackoff bound the retry delay of a failing key.
	MinBackoff, MaxBackoff time.Duration
	// Workers is how many keys sync at once (1 when zero). Keys never sync concurrently with
	// themselves.
	Workers int
	// Clock drives the backoff and the resync; tests pass a fake one.
	Clock clock.WithTicker
}

// Singleton is the key of a controller without Keys.
const Singleton = "singleton"

// Trigger maps an informer event's object to the keys it touches.
type Trigger func(obj any) []string

// Controller runs Options.Sync for the keys its watched informers and the resync produce.
type Controller struct {
	opts   Options
	queue  workqueue.TypedRateLimitingInterface[string]
	synced []cache.InformerSynced

	mu sync.Mutex
	// started is set once the informers have synced; firstSyncs are the keys listed then that
	// have not been synced yet.
	started    bool
	firstSyncs map[string]bool
}

// New returns a controller; register its informers with Watch, start them, and call Run.
func New(opts Options) *Controller {
	if opts.Name == "" || opts.Sync == nil {
		panic("controller: Options need a Name and a Sync")
	}
	if opts.Resync == 0 {
		opts.Resync = DefaultResync
	}
	if opts.MinBackoff == 0 {
		opts.MinBackoff = DefaultMinBackoff
	}
	if opts.MaxBackoff == 0 {
		opts.MaxBackoff = DefaultMaxBackoff
	}
	if opts.Workers == 0 {
		opts.Workers = 1
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Keys == nil {
		opts.Keys = func() ([]string, error) { return []string{Singleton}, nil }
	}
	return &Controller{
		opts: opts,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](opts.MinBackoff, opts.MaxBackoff),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: opts.Name, Clock: opts.Clock}),
	}
}

// Watch enqueues the keys trigger returns for every add, update and delete the informer sees,
// and makes Run wait for the informer's first list.
func (c *Controller) Watch(informer cache.SharedInformer, trigger Trigger) {
	enqueue := func(obj any) {
		for _, key := range trigger(obj) {
			c.queue.Add(key)
		}
	}
	// AddEventHandler fails only on a stopped informer, which then never syncs and Run waits.
	_, _ = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: enqueue,
	})
	c.synced = append(c.synced, informer.HasSynced)
}

// WaitFor makes Run wait for an informer the controller reads but takes no events from.
func (c *Controller) WaitFor(informer cache.SharedInformer) {
	c.synced = append(c.synced, informer.HasSynced)
}

// ObjectName is the trigger of a controller keyed by object name. The controllers here watch
// cluster-scoped objects or a single namespace, so the name alone is the key.
func ObjectName(obj any) []string {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	o, err := meta.Accessor(obj)
	if err != nil {
		return nil
	}
	return []string{o.GetName()}
}

// AsSingleton is the trigger of a controller without Keys, which reconciles one thing as a
// whole: every event asks for its one sync.
func AsSingleton(any) []string { return []string{Singleton} }

// All is the trigger of an event that may matter to every key, such as a changed Secret that
// any object may refer to.
func (c *Controller) All(any) []string {
	keys, err := c.opts.Keys()
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("%s: listing keys: %w", c.opts.Name, err))
		return nil
	}
	return keys
}

// Only narrows a trigger to the objects keep accepts.
func Only(keep func(obj any) bool, trigger Trigger) Trigger {
	return func(obj any) []string {
		o := obj
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			o = d.Obj
		}
		if !keep(o) {
			return nil
		}
		return trigger(obj)
	}
}

// Enqueue asks for a sync of key, as an event would.
func (c *Controller) Enqueue(key string) { c.queue.Add(key) }

// EnqueueAfter asks for a sync of key once d has passed on the controller's clock, for a
// deadline (a certificate's renewal) that comes before the next resync.
func (c *Controller) EnqueueAfter(key string, d time.Duration) { c.queue.AddAfter(key, d) }

// Run waits for the watched informers, syncs every key, then works until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	defer c.queue.ShutDown()
	logger := klog.FromContext(ctx).WithValues("controller", c.opts.Name)
	ctx = klog.NewContext(ctx, logger)
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return
	}
	logger.Info("controller started")
	first := c.All(nil)
	c.mu.Lock()
	c.started, c.firstSyncs = true, map[string]bool{}
	for _, key := range first {
		c.firstSyncs[key] = true
	}
	c.mu.Unlock()
	for _, key := range first {
		c.queue.Add(key)
	}
	var wg sync.WaitGroup
	for range c.opts.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wait.UntilWithContext(ctx, c.work, time.Second)
		}()
	}
	ticker := c.opts.Clock.NewTicker(c.opts.Resync)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			c.queue.ShutDown()
			wg.Wait()
			return
		case <-ticker.C():
			c.enqueueAll()
		}
	}
}

// Synced reports whether every key that existed when the informers had synced has been synced
// once, successfully or not: what the controller serves from (a cache it fills) then reflects
// every object, valid or not, so a server may report itself ready.
func (c *Controller) Synced() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.started && len(c.firstSyncs) == 0
}

func (c *Controller) enqueueAll() {
	for _, key := range c.All(nil) {
		c.queue.Add(key)
	}
}

func (c *Controller) work(ctx context.Context) {
	for {
		key, quit := c.queue.Get()
		if quit {
			return
		}
		err := c.opts.Sync(ctx, key)
		c.mu.Lock()
		delete(c.firstSyncs, key)
		c.mu.Unlock()
		switch {
		case ctx.Err() != nil:
			// Shutting down: the failure is the cancellation.
		case err != nil:
			klog.FromContext(ctx).Info("will retry", "key", key, "reason", err.Error())
			c.queue.AddRateLimited(key)
		default:
			c.queue.Forget(key)
		}
		c.queue.Done(key)
	}
}
