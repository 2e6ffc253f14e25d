// Package loadbalancer is the LoadBalancer Service controller of the simulated managed clusters
// (GKE, EKS, AKS profiles). It plays the cloud load balancer on a single machine: every Service of
// type LoadBalancer without a spec.loadBalancerClass gets an address of this machine, from a
// loopback range by default, and for each TCP port a forwarder on that address that relays
// connections round robin to the Service's ready endpoints (pod IP and target port, read from its
// EndpointSlices; pods on a CNI bridge are reachable from the host).
//
// The address is published in status.loadBalancer.ingress as an IP (ModeIP, like GKE and AKS) or
// as a hostname (ModeHostname, like EKS), which a marked block of the hosts file maps to the IP.
// spec.loadBalancerIP is honoured when set. The address is published once every TCP port
// listens; until then, and on any error, the Service gets a SyncLoadBalancerFailed Event and is
// retried with backoff. When a Service is deleted or stops being of type LoadBalancer, its
// address, forwarders and hosts entry are released. When the controller stops it releases all of
// them and removes its hosts block, but leaves Service statuses alone, as a cloud controller
// manager does: on restart a Service gets back the IP its status names.
package loadbalancer

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"sealion.dev/providers/internal/hostsblock"
	"sealion.dev/providers/managed/internal/tcprelay"
)

// component names the controller in Events and logs.
const component = "sealion-loadbalancer"

// Event reasons, the ones Kubernetes' own service controller uses.
const (
	reasonEnsured = "EnsuredLoadBalancer"
	reasonFailed  = "SyncLoadBalancerFailed"
	reasonDeleted = "DeletedLoadBalancer"
)

// Controller gives LoadBalancer Services an address and forwards their traffic. Create it with New
// and call Run once.
type Controller struct {
	cfg      Config
	client   kubernetes.Interface
	factory  informers.SharedInformerFactory
	services corelisters.ServiceLister
	slices   discoverylisters.EndpointSliceLister
	synced   []cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
	recorder record.EventRecorder // set by Run
	logger   klog.Logger          // set by Run

	mu        sync.Mutex
	pool      *pool
	balancers map[string]*balancer  // by Service key (namespace/name)
	hosts     hostsblock.File       // ModeHostname only
	oldHosts  map[string]netip.Addr // the hosts block Run found, to give hostnames their old IP back
}

// balancer is what one Service has: its address and a forwarder per TCP port. Only the worker
// syncing the Service touches its forwarders.
type balancer struct {
	addr       netip.Addr
	hostname   string               // ModeHostname only
	forwarders map[int32]*forwarder // by Service port
}

// New returns a controller that watches Services and EndpointSlices through client.
func New(client kubernetes.Interface, cfg Config) (*Controller, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	services := factory.Core().V1().Services()
	endpointSlices := factory.Discovery().V1().EndpointSlices()
	c := &Controller{
		cfg:      cfg,
		client:   client,
		factory:  factory,
		services: services.Lister(),
		slices:   endpointSlices.Lister(),
		synced:   []cache.InformerSynced{services.Informer().HasSynced, endpointSlices.Informer().HasSynced},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, time.Minute),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: component}),
		logger:    klog.Background(),
		pool:      newPool(cfg.Range),
		balancers: map[string]*balancer{},
	}
	if cfg.Mode == ModeHostname {
		c.hosts = hostsFile(cfg.HostsFile)
	}

	enqueueService := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			c.queue.Add(key)
		}
	}
	if _, err := services.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueueService,
		UpdateFunc: func(_, obj any) { enqueueService(obj) },
		DeleteFunc: enqueueService,
	}); err != nil {
		return nil, fmt.Errorf("loadbalancer: watching Services: %w", err)
	}
	if _, err := endpointSlices.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.enqueueSliceService,
		// A slice's service-name label can change; both Services are affected.
		UpdateFunc: func(old, obj any) { c.enqueueSliceService(old); c.enqueueSliceService(obj) },
		DeleteFunc: c.enqueueSliceService,
	}); err != nil {
		return nil, fmt.Errorf("loadbalancer: watching EndpointSlices: %w", err)
	}
	return c, nil
}

func (c *Controller) enqueueSliceService(obj any) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	slice, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok {
		return
	}
	if name := slice.Labels[discoveryv1.LabelServiceName]; name != "" {
		c.queue.Add(slice.Namespace + "/" + name)
	}
}

// Run reconciles Services until ctx ends, then closes every forwarder, releases every address and
// removes its hosts block. The error says what could not be cleaned up or started.
func (c *Controller) Run(ctx context.Context) error {
	c.logger = klog.FromContext(ctx).WithValues("controller", component)
	ctx = klog.NewContext(ctx, c.logger)
	defer c.queue.ShutDown()

	if c.cfg.Mode == ModeHostname {
		old, err := c.hosts.Read()
		if err != nil {
			return fmt.Errorf("loadbalancer: %w", err)
		}
		c.oldHosts = old
	}

	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: c.client.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	c.recorder = broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component})

	c.factory.Start(ctx.Done())
	defer c.factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return c.releaseAll()
	}
	c.logger.Info("controller started", "mode", c.cfg.Mode, "range", c.cfg.Range.String())

	const workers = 2
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wait.UntilWithContext(ctx, c.work, time.Second)
		}()
	}
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
	return c.releaseAll()
}

func (c *Controller) work(ctx context.Context) {
	for {
		key, quit := c.queue.Get()
		if quit {
			return
		}
		if err := c.sync(ctx, key); err != nil {
			c.logger.V(2).Info("will retry", "service", key, "reason", err.Error())
			c.queue.AddRateLimited(key)
		} else {
			c.queue.Forget(key)
		}
		c.queue.Done(key)
	}
}

// wanted says whether the Service is ours: type LoadBalancer without a load balancer class (a
// class hands the Service to another implementation).
func wanted(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeLoadBalancer && svc.Spec.LoadBalancerClass == nil
}

func (c *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil // not a key we queued; retrying cannot help
	}
	svc, err := c.services.Services(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		c.release(key)
		return nil
	}
	if err != nil {
		return err
	}

	if !wanted(svc) {
		if c.release(key) {
			c.recorder.Event(svc, corev1.EventTypeNormal, reasonDeleted, "Released the load balancer address")
		}
		// Like the cloud service controller, clear the address of a Service that is no longer a
		// LoadBalancer; one that has a class belongs to someone else.
		if svc.Spec.Type != corev1.ServiceTypeLoadBalancer && len(svc.Status.LoadBalancer.Ingress) > 0 {
			return c.writeStatus(ctx, svc, nil)
		}
		return nil
	}

	lb, err := c.ensureAddress(key, svc)
	if err == nil {
		err = c.ensureForwarders(svc, lb)
	}
	if err != nil {
		c.recorder.Eventf(svc, corev1.EventTypeWarning, reasonFailed, "Error syncing load balancer: %v", err)
		return err
	}
	ingress := c.ingress(lb)
	if equality.Semantic.DeepEqual(svc.Status.LoadBalancer.Ingress, ingress) {
		return nil
	}
	if err := c.writeStatus(ctx, svc, ingress); err != nil {
		return err
	}
	c.recorder.Eventf(svc, corev1.EventTypeNormal, reasonEnsured, "Load balancer listening on %s", c.published(lb))
	return nil
}

// ensureAddress gives the Service an address (and in ModeHostname a hosts entry): its
// spec.loadBalancerIP when set, else the one it has, else the one its status or the old hosts
// block names when free, else the lowest free one.
func (c *Controller) ensureAddress(key string, svc *corev1.Service) (*balancer, error) {
	var want netip.Addr
	if ip := svc.Spec.LoadBalancerIP; ip != "" {
		addr, err := netip.ParseAddr(ip)
		if err != nil {
			return nil, fmt.Errorf("spec.loadBalancerIP %q is not an IP address", ip)
		}
		want = addr.Unmap()
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	lb := c.balancers[key]
	if lb != nil && want.IsValid() && lb.addr != want {
		c.releaseLocked(key) // spec.loadBalancerIP changed: move to the new address
		lb = nil
	}
	if lb == nil {
		addr, err := c.allocateLocked(key, svc, want)
		if err != nil {
			return nil, err
		}
		lb = &balancer{addr: addr, forwarders: map[int32]*forwarder{}}
		if c.cfg.Mode == ModeHostname {
			lb.hostname = c.cfg.hostname(svc.Namespace, svc.Name)
		}
		c.balancers[key] = lb
	}
	// Written on every sync, not only on allocation, so a failed write is retried; it is a no-op
	// when the file is up to date.
	if err := c.writeHostsLocked(); err != nil {
		return nil, err
	}
	return lb, nil
}

func (c *Controller) allocateLocked(key string, svc *corev1.Service, want netip.Addr) (netip.Addr, error) {
	if want.IsValid() {
		if err := c.pool.assign(key, want); err != nil {
			return netip.Addr{}, fmt.Errorf("cannot use spec.loadBalancerIP: %w", err)
		}
		return want, nil
	}
	var previous []netip.Addr
	if c.cfg.Mode == ModeHostname {
		if addr, ok := c.oldHosts[c.cfg.hostname(svc.Namespace, svc.Name)]; ok {
			previous = append(previous, addr)
		}
	}
	for _, ing := range svc.Status.LoadBalancer.Ingress {
		if addr, err := netip.ParseAddr(ing.IP); err == nil {
			previous = append(previous, addr)
		}
	}
	for _, addr := range previous {
		if c.pool.assign(key, addr) == nil {
			return addr.Unmap(), nil
		}
	}
	return c.pool.next(key)
}

// writeHostsLocked makes the hosts block list the hostname of every balancer.
func (c *Controller) writeHostsLocked() error {
	if c.cfg.Mode != ModeHostname {
		return nil
	}
	entries := make(map[string]netip.Addr, len(c.balancers))
	for _, lb := range c.balancers {
		entries[lb.hostname] = lb.addr
	}
	return c.hosts.Write(entries)
}

// ensureForwarders runs a forwarder for every TCP port of the Service with its current endpoints,
// and stops those of ports it no longer has.
func (c *Controller) ensureForwarders(svc *corev1.Service, lb *balancer) error {
	slices, err := c.slices.EndpointSlices(svc.Namespace).List(labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: svc.Name}))
	if err != nil {
		return fmt.Errorf("listing EndpointSlices: %w", err)
	}
	endpoints := tcprelay.ReadyEndpoints(slices)

	ports := map[int32]corev1.ServicePort{}
	for _, p := range svc.Spec.Ports {
		if p.Protocol != corev1.ProtocolTCP {
			c.recorder.Eventf(svc, corev1.EventTypeWarning, reasonFailed, "Port %d/%s is not forwarded: the load balancer forwards TCP only", p.Port, p.Protocol)
			continue
		}
		ports[p.Port] = p
	}
	for port, f := range lb.forwarders {
		if _, ok := ports[port]; !ok {
			f.close()
			delete(lb.forwarders, port)
		}
	}
	var errs []error
	for port, p := range ports {
		backends := endpoints[p.Name]
		if f, ok := lb.forwarders[port]; ok {
			f.setBackends(backends)
			continue
		}
		addr := net.JoinHostPort(lb.addr.String(), strconv.Itoa(int(port)))
		logger := c.logger.WithValues("service", klog.KObj(svc), "port", p.Name)
		f, err := startForwarder(logger, addr, backends, c.cfg.DialTimeout)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		lb.forwarders[port] = f
	}
	return errors.Join(errs...)
}

func (c *Controller) ingress(lb *balancer) []corev1.LoadBalancerIngress {
	if c.cfg.Mode == ModeHostname {
		return []corev1.LoadBalancerIngress{{Hostname: lb.hostname}}
	}
	// Proxy, not VIP: traffic reaches the pods from the forwarder, and kube-proxy must not
	// short-circuit the address to the endpoints, which would break connections from this machine.
	return []corev1.LoadBalancerIngress{{IP: lb.addr.String(), IPMode: ptr.To(corev1.LoadBalancerIPModeProxy)}}
}

func (c *Controller) published(lb *balancer) string {
	if c.cfg.Mode == ModeHostname {
		return fmt.Sprintf("%s (%s)", lb.hostname, lb.addr)
	}
	return lb.addr.String()
}

func (c *Controller) writeStatus(ctx context.Context, svc *corev1.Service, ingress []corev1.LoadBalancerIngress) error {
	updated := svc.DeepCopy()
	updated.Status.LoadBalancer.Ingress = ingress
	if _, err := c.client.CoreV1().Services(svc.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating the status of Service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	return nil
}

// release closes the Service's forwarders and frees its address and hosts entry; false when it had none.
func (c *Controller) release(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.balancers[key]; !ok {
		return false
	}
	c.releaseLocked(key)
	if err := c.writeHostsLocked(); err != nil {
		// The stale line maps a hostname nobody publishes any more; the next write fixes it.
		c.logger.Error(err, "removing a hosts entry", "service", key)
	}
	return true
}

func (c *Controller) releaseLocked(key string) {
	lb := c.balancers[key]
	for _, f := range lb.forwarders {
		f.close()
	}
	c.pool.release(lb.addr)
	delete(c.balancers, key)
}

func (c *Controller) releaseAll() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for key := range c.balancers {
		c.releaseLocked(key)
	}
	if c.cfg.Mode == ModeHostname {
		if err := c.hosts.Write(nil); err != nil {
			return fmt.Errorf("loadbalancer: removing the hosts block: %w", err)
		}
	}
	return nil
}
