package main

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

const (
	group               = "core.matrixorigin.io"
	poolLabel           = "pool.matrixorigin.io/pool-name"
	phaseLabel          = "pool.matrixorigin.io/pod-phase"
	claimedByLabel      = "pool.matrixorigin.io/claimed-by"
	lastOwnerAnnotation = "pool.matrixorigin.io/last-owner"
	claimFinalizer      = "core.matrixorigin.io/release-pods"

	claimedByIndex = "claimed-by"        // Pods by namespace/claim of their label
	namesPodIndex  = "cnclaim/names-pod" // claims by namespace/Pod of spec.podName, sourcePod
	waitingIndex   = "cnclaim/waiting"   // claims by namespace/pool they wait in for a Pod
	anyPool        = "*"
)

var (
	claimsGVR    = schema.GroupVersionResource{Group: group, Version: "v1alpha1", Resource: "cnclaims"}
	poolsGVR     = schema.GroupVersionResource{Group: group, Version: "v1alpha1", Resource: "cnpools"}
	claimSetsGVR = schema.GroupVersionResource{Group: group, Version: "v1alpha1", Resource: "cnclaimsets"}
)

// Controller reconciles CNClaims: a work queue of claim keys fed by the claim and Pod
// informers' events, drained by workers.
type Controller struct {
	typed      kubernetes.Interface
	claimsAPI  dynamic.NamespaceableResourceInterface
	pods       corelisters.PodLister
	podIndex   cache.Indexer
	claimIndex cache.Indexer
	synced     []cache.InformerSynced
	queue      workqueue.RateLimitingInterface
	recorder   *eventRecorder
	counts     *counters
	tracker    *bindablePods
	claimRV    *ownWrites // claims' last writes
	podRV      *ownWrites // Pods' last writes
	taking     *reservations
	podsSynced cache.InformerSynced
}

func newController(typed kubernetes.Interface, dyn dynamic.Interface,
	pods coreinformers.PodInformer, claims informers.GenericInformer,
	recorder *eventRecorder, counts *counters) (*Controller, error) {
	c := &Controller{
		typed: typed, claimsAPI: dyn.Resource(claimsGVR), pods: pods.Lister(),
		podIndex: pods.Informer().GetIndexer(), claimIndex: claims.Informer().GetIndexer(),
		queue: workqueue.NewRateLimitingQueueWithConfig(
			workqueue.DefaultControllerRateLimiter(),
			workqueue.RateLimitingQueueConfig{Name: "cnclaim"}),
		recorder: recorder, counts: counts, tracker: newBindablePods(),
		claimRV: newOwnWrites(), podRV: newOwnWrites(), taking: newReservations(),
		podsSynced: pods.Informer().HasSynced,
	}
	c.synced = []cache.InformerSynced{pods.Informer().HasSynced, claims.Informer().HasSynced}
	if err := pods.Informer().AddIndexers(cache.Indexers{claimedByIndex: podClaimedBy}); err != nil {
		return nil, err
	}
	if err := claims.Informer().AddIndexers(cache.Indexers{
		namesPodIndex: claimNamesPods, waitingIndex: claimWaitingPool}); err != nil {
		return nil, err
	}
	if _, err := claims.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, obj interface{}) { c.enqueue(obj) },
		DeleteFunc: c.enqueue,
	}); err != nil {
		return nil, err
	}
	// One handler both keeps the tracker and maps the event to claims, so the mapping
	// always reads a tracker that has seen the event (client-go runs each handler on a
	// goroutine of its own).
	if _, err := pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) {
			pod := obj.(*corev1.Pod)
			c.tracker.seen(pod)
			c.podToClaims(pod)
		},
		UpdateFunc: func(old, obj interface{}) {
			pod := obj.(*corev1.Pod)
			c.tracker.seen(pod)
			c.podToClaims(old.(*corev1.Pod))
			c.podToClaims(pod)
		},
		DeleteFunc: func(obj interface{}) {
			if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tombstone.Obj
			}
			if pod, ok := obj.(*corev1.Pod); ok {
				c.tracker.gone(pod.Namespace, pod.Name)
				c.podRV.forget(pod.Namespace + "/" + pod.Name)
				c.podToClaims(pod)
			}
		},
	}); err != nil {
		return nil, err
	}
	return c, nil
}

func podClaimedBy(obj interface{}) ([]string, error) {
	pod := obj.(*corev1.Pod)
	if claim := pod.Labels[claimedByLabel]; claim != "" {
		return []string{pod.Namespace + "/" + claim}, nil
	}
	return nil, nil
}

func claimNamesPods(obj interface{}) ([]string, error) {
	claim := obj.(*unstructured.Unstructured)
	var keys []string
	for _, pod := range []string{podNameOf(claim), sourcePodOf(claim)} {
		if pod != "" {
			keys = append(keys, claim.GetNamespace()+"/"+pod)
		}
	}
	return keys, nil
}

// claimWaitingPool: namespace/pool a claim waits in for an Idle Pod (it has none, or
// migrates off the one it has).
func claimWaitingPool(obj interface{}) ([]string, error) {
	claim := obj.(*unstructured.Unstructured)
	if claim.GetDeletionTimestamp() != nil {
		return nil, nil
	}
	if pod := podNameOf(claim); pod != "" && pod != sourcePodOf(claim) {
		return nil, nil
	}
	pool, _, _ := unstructured.NestedString(claim.Object, "spec", "poolName")
	if pool == "" {
		pool = anyPool
	}
	return []string{claim.GetNamespace() + "/" + pool}, nil
}

func (c *Controller) enqueue(obj interface{}) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	c.queue.Add(key)
}

// podToClaims queues the claims a Pod event concerns: the claim its label names, the
// claims whose spec names it, and, for a bindable Pod, about as many claims waiting in its
// pool as the pool has bindable Pods (waking every waiting claim on every Pod event would
// cost O(claims) per event).
func (c *Controller) podToClaims(pod *corev1.Pod) {
	keys := map[string]struct{}{}
	named, _ := c.claimIndex.IndexKeys(namesPodIndex, pod.Namespace+"/"+pod.Name)
	for _, key := range named {
		keys[key] = struct{}{}
	}
	if owner := pod.Labels[claimedByLabel]; owner != "" {
		keys[pod.Namespace+"/"+owner] = struct{}{}
	}
	pool := pod.Labels[poolLabel]
	if pool != "" && c.podsSynced() && c.tracker.holds(pod.Namespace, pool, pod.Name) {
		wanted := 2*c.tracker.count(pod.Namespace, pool) + 4
		for _, value := range []string{pod.Namespace + "/" + pool, pod.Namespace + "/" + anyPool} {
			waiting, _ := c.claimIndex.IndexKeys(waitingIndex, value)
			sort.Strings(waiting)
			if len(waiting) > wanted {
				waiting = waiting[:wanted]
			}
			for _, key := range waiting {
				keys[key] = struct{}{}
			}
		}
	}
	for key := range keys {
		c.queue.Add(key)
	}
}

// Run waits for the caches, starts the workers and blocks until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return fmt.Errorf("caches not synced: %w", ctx.Err())
	}
	klog.InfoS("caches synced; starting workers", "workers", workers)
	for i := 0; i < workers; i++ {
		go wait.UntilWithContext(ctx, c.runWorker, time.Second)
	}
	<-ctx.Done()
	klog.InfoS("shutting down")
	return nil
}

func (c *Controller) runWorker(ctx context.Context) {
	for c.processNextItem(ctx) {
	}
}

func (c *Controller) processNextItem(ctx context.Context) bool {
	item, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(item)
	key := item.(string)
	after, err := c.reconcile(ctx, key)
	switch {
	case err != nil:
		c.counts.reconciled("error")
		klog.ErrorS(err, "reconcile failed", "claim", key)
		c.queue.AddRateLimited(key)
	case after > 0:
		c.counts.reconciled("requeue_after")
		c.queue.Forget(key)
		c.queue.AddAfter(key, after)
	default:
		c.counts.reconciled("success")
		c.queue.Forget(key)
	}
	return true
}
